// CF attribute decoding: time units ("hours since 1900-01-01 00:00 +05:00"), date-time text and
// calendars (cf_time.hpp), and the whole decoding plan xarray would make from a variable's
// attributes (_FillValue, missing_value, scale_factor, add_offset, units, calendar, dtype,
// valid_range, ...), applied to stored values.
//
// Input: one selector byte, then
//   0: units or date-time text            1: a dtype byte, then the attributes as a JSON object,
//   optionally NUL and the stored values   2: year/month/day bytes, then a calendar name
#include <cstring>
#include <nlohmann/json.hpp>

#include "fuzz_common.hpp"
#include "lazycube/dataset/cf.hpp"
#include "lazycube/dataset/cf_time.hpp"

using namespace lazycube;

namespace {

// The stored types CF decoding meets in practice.
const DataType kStored[] = {DataType::int_(1), DataType::int_(2),  DataType::int_(4),  DataType::int_(8),
                            DataType::uint(1), DataType::uint(2),  DataType::uint(4),  DataType::uint(8),
                            DataType::float_(2), DataType::float_(4), DataType::float_(8), DataType::boolean(),
                            DataType::complex(8), DataType::datetime("ns"), DataType::timedelta("s"),
                            DataType::bytes(3)};

void fuzz_time_text(std::string_view text) {
  if (const auto u = cf::parse_time_units(text)) {
    fuzz::check(u->unit_ns > 0, "time units with a step of " + std::to_string(u->unit_ns) + " ns");
    (void)cf::format_reference_date(u->reference_ns, u->reference_offset_s);
  }
  if (const auto t = cf::parse_datetime(text)) {
    (void)cf::format_pandas_timestamp(t->ns, t->offset_s);
    (void)cf::format_datetime_ns(t->ns);
  }
  (void)cf::time_unit_ns(text);
  (void)cf::is_standard_calendar(text);
}

void fuzz_plan(const DataType& stored, std::string_view attrs_text, std::string_view values) {
  const auto attrs = nlohmann::json::parse(attrs_text, nullptr, /*allow_exceptions=*/false);
  if (!attrs.is_object()) return;
  fuzz::typed_or_valid([&] {
    CfInputs inputs;
    inputs.name = "fuzz";
    inputs.mask_valid_range = !values.empty() && (values.front() & 1);
    const CfDecoding plan = CfDecoding::plan(stored, attrs, inputs);
    (void)plan.attrs().dump();
    (void)plan.encoding().dump();
    const std::uint64_t count = std::min<std::uint64_t>(64, values.size() / stored.itemsize);
    Buffer raw(count * stored.itemsize), out(count * plan.decoded_dtype().itemsize);
    if (count != 0) std::memcpy(raw.data(), values.data(), raw.size());
    plan.apply(raw.view(), count, out.span());
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::Input in(data, size);
  const int mode = in.byte() % 3;
  if (mode == 0) {
    fuzz_time_text(in.rest());
  } else if (mode == 1) {
    const DataType& stored = kStored[in.byte() % std::size(kStored)];
    const auto [attrs, values] = in.split_at_nul();
    fuzz_plan(stored, attrs, values);
  } else {
    const std::int64_t year = static_cast<std::int8_t>(in.byte()) * 100 + in.byte() % 100;
    const unsigned month = in.byte() % 14, day = in.byte() % 33;
    const std::string_view calendar = in.rest();
    const auto days = cf::calendar_day(calendar, year, month, day);
    fuzz::check(!days || cf::is_cf_calendar(calendar), "calendar_day answered for an unknown calendar");
  }
  return 0;
}
