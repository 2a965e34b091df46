// Opens a dataset (the bundled ERA5-like sample by default), lists its variables and reads the
// first day of 2 m temperature: only the chunks under that window are fetched and decoded.
//
//   read_window [URL]        e.g. read_window data/era5_sample_v3.zarr
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>

#include <lazycube/lazycube.hpp>

int main(int argc, char** argv) {
  const std::string url = argc > 1 ? argv[1] : "data/era5_sample_v2.zarr";
  try {
    auto ds = lazycube::open(url);

    std::printf("%s\n  variables:", url.c_str());
    for (const auto& name : ds.variables()) std::printf(" %s", name.c_str());
    std::printf("\n");

    lazycube::NDArray t2m = ds["t2m"].isel({{"time", lazycube::Slice{0, 24}}}).read();

    std::printf("  t2m[time=0:24] shape (");
    for (std::size_t i = 0; i < t2m.shape.size(); ++i)
      std::printf("%s%llu", i ? ", " : "", static_cast<unsigned long long>(t2m.shape[i]));
    std::printf(")\n");

    double sum = 0, lo = INFINITY, hi = -INFINITY;
    std::size_t n = 0;
    for (float v : t2m.values<float>()) {
      if (std::isnan(v)) continue;
      sum += v;
      lo = std::min<double>(lo, v);
      hi = std::max<double>(hi, v);
      ++n;
    }
    if (n == 0) {
      std::fprintf(stderr, "no valid t2m values in the window\n");
      return 1;
    }
    std::printf("  t2m min %.2f K, mean %.2f K, max %.2f K over %zu values\n", lo, sum / n, hi, n);
    return 0;
  } catch (const lazycube::Error& e) {
    std::fprintf(stderr, "lazycube error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
