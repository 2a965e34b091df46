#include "lazycube/concat_array.hpp"

#include <algorithm>
#include <cstring>

#include <nlohmann/json.hpp>

#include "lazycube/error.hpp"

namespace lazycube {

namespace {

// Layout of one piece inside the selection's C-order output: `outer` blocks (the dims before the
// axis), each holding `full` rows along the axis of `inner` elements; the piece fills `count`
// rows from row `first` of every block.
struct PieceLayout {
  std::uint64_t outer = 1, inner = 1, full = 0, first = 0, count = 0;

  bool contiguous() const { return outer == 1 || count == full; }
  std::uint64_t elements() const { return outer * count * inner; }

  // Copies the piece's own C-order elements (src) into their places in the output (dst).
  template <class T>
  void scatter(const T* src, T* dst) const {
    for (std::uint64_t o = 0; o < outer; ++o)
      std::copy_n(src + o * count * inner, count * inner, dst + (o * full + first) * inner);
  }
};

PieceLayout layout_of(const ArraySelection& selection, std::size_t axis, const ConcatArray::Piece& piece) {
  PieceLayout l;
  for (std::size_t d = 0; d < axis; ++d) l.outer *= selection[d].count;
  for (std::size_t d = axis + 1; d < selection.size(); ++d) l.inner *= selection[d].count;
  l.full = selection[axis].count;
  l.first = piece.out_first;
  l.count = piece.selection[axis].count;
  return l;
}

// The piece's part of `dest` when it is contiguous there (item bytes per element).
MutableByteView contiguous_view(const PieceLayout& l, MutableByteView dest, std::size_t item) {
  return dest.subspan(l.first * l.inner * item, l.elements() * item);
}

// Runs read(piece, view) for every piece, straight into `dest` where the piece is contiguous
// there, else through a scratch buffer scattered into place.
template <class ReadFn>
void read_pieces(const ConcatArray& a, const ArraySelection& selection, MutableByteView dest, std::size_t item,
                 ReadFn&& read) {
  for (const auto& piece : a.pieces(selection)) {
    const PieceLayout l = layout_of(selection, a.axis(), piece);
    if (l.elements() == 0) continue;
    if (l.contiguous()) {
      read(piece, contiguous_view(l, dest, item));
      continue;
    }
    Buffer scratch(l.elements() * item);
    read(piece, scratch.span());
    // Byte-wise scatter: rows of `inner * item` bytes.
    PieceLayout bytes = l;
    bytes.inner *= item;
    bytes.scatter(scratch.data(), dest.data());
  }
}

}  // namespace

nlohmann::json ConcatArray::codecs_json() const { return parts_.front()->codecs_json(); }

ConcatArray::ConcatArray(std::vector<ArrayPtr> parts, std::size_t axis) : parts_(std::move(parts)), axis_(axis) {
  if (parts_.empty()) throw UsageError("ConcatArray needs at least one part");
  for (const auto& p : parts_)
    if (!p) throw UsageError("ConcatArray: a part is null");
  const ArrayPtr& first = parts_.front();
  if (axis_ >= first->shape().size())
    throw UsageError("ConcatArray: axis " + std::to_string(axis_) + " of " + first->describe() + ", which has " +
                     std::to_string(first->shape().size()) + " dimensions");
  shape_ = first->shape();
  shape_[axis_] = 0;
  unit_offsets_.push_back(0);
  for (const auto& p : parts_) {
    if (p->dtype().name() != first->dtype().name())
      throw MetadataError("cannot concatenate " + p->describe() + " (dtype " + p->dtype().name() + ") to " +
                          first->describe() + " (dtype " + first->dtype().name() + ")");
    const Shape& s = p->shape();
    if (s.size() != shape_.size())
      throw MetadataError("cannot concatenate " + p->describe() + " (" + std::to_string(s.size()) +
                          " dimensions) to " + first->describe() + " (" + std::to_string(shape_.size()) + ")");
    for (std::size_t d = 0; d < s.size(); ++d)
      if (d != axis_ && s[d] != first->shape()[d])
        throw MetadataError("cannot concatenate " + p->describe() + " to " + first->describe() + ": extent " +
                            std::to_string(s[d]) + " along axis " + std::to_string(d) + " where the first has " +
                            std::to_string(first->shape()[d]) + " (only axis " + std::to_string(axis_) +
                            " may differ)");
    offsets_.push_back(shape_[axis_]);
    shape_[axis_] += s[axis_];
    unit_offsets_.push_back(unit_offsets_.back() + p->read_grid().count(axis_));
  }
  offsets_.push_back(shape_[axis_]);
}

std::string ConcatArray::describe() const {
  std::string out = "concatenation of ";
  for (std::size_t i = 0; i < parts_.size(); ++i) out += (i ? ", " : "") + parts_[i]->describe();
  return out;
}

std::string ConcatArray::data_version() const {
  std::string out;
  for (const auto& p : parts_) {
    const std::string v = p->data_version();
    if (v.empty()) return {};
    out += v + "|";
  }
  return out;
}

std::string ConcatArray::cache_id() const {
  std::string out = "concat:";
  for (const auto& p : parts_) out += p->cache_id() + "|";
  return out;
}

void ConcatArray::check(const ArraySelection& selection) const {
  if (selection.size() != shape_.size())
    throw UsageError(describe() + ": a selection has " + std::to_string(selection.size()) + " ranges for " +
                     std::to_string(shape_.size()) + " dimensions");
}

std::vector<ConcatArray::Piece> ConcatArray::pieces(const ArraySelection& selection) const {
  check(selection);
  const IndexRange& r = selection[axis_];
  std::vector<Piece> out;
  std::uint64_t j = 0;
  while (j < r.count) {
    const std::uint64_t index = r.at(j);
    if (index >= shape_[axis_])
      throw SelectionError(describe() + ": index " + std::to_string(index) + " outside [0, " +
                           std::to_string(shape_[axis_]) + ") along axis " + std::to_string(axis_));
    const auto it = std::upper_bound(offsets_.begin(), offsets_.end(), index);
    const std::size_t part = static_cast<std::size_t>(it - offsets_.begin()) - 1;
    const std::uint64_t lo = offsets_[part], hi = offsets_[part + 1];
    // The run of j whose indices stay inside [lo, hi): indices are monotone in j.
    std::uint64_t n;
    if (r.step > 0) {
      const auto step = static_cast<std::uint64_t>(r.step);
      n = std::min(r.count - j, (hi - 1 - index) / step + 1);
    } else if (r.step < 0) {
      const auto step = static_cast<std::uint64_t>(-r.step);
      n = std::min(r.count - j, (index - lo) / step + 1);
    } else {
      n = r.count - j;
    }
    Piece piece{part, selection, j};
    piece.selection[axis_] = {index - lo, n, r.step};
    out.push_back(std::move(piece));
    j += n;
  }
  return out;
}

void ConcatArray::read(const ArraySelection& selection, MutableByteView dest) const {
  read_pieces(*this, selection, dest, dtype().itemsize,
              [&](const Piece& p, MutableByteView view) { parts_[p.part]->read(p.selection, view); });
}

void ConcatArray::read_converted(const ArraySelection& selection, MutableByteView dest,
                                 const ElementConversion& conversion) const {
  converted_count(selection, dest, conversion);
  read_pieces(*this, selection, dest, conversion.output_dtype().itemsize, [&](const Piece& p, MutableByteView view) {
    parts_[p.part]->read_converted(p.selection, view, conversion);
  });
}

void ConcatArray::read_strings(const ArraySelection& selection, std::vector<std::string>& dest) const {
  std::uint64_t total = 1;
  for (const auto& r : selection) total *= r.count;
  dest.assign(total, std::string());
  for (const auto& piece : pieces(selection)) {
    const PieceLayout l = layout_of(selection, axis_, piece);
    if (l.elements() == 0) continue;
    std::vector<std::string> part;
    parts_[piece.part]->read_strings(piece.selection, part);
    l.scatter(part.data(), dest.data());
  }
}

void ConcatArray::read_cached(std::span<const ArraySelection> selections, std::span<const MutableByteView> dests,
                              ChunkCache& cache) const {
  if (selections.size() != dests.size())
    throw UsageError(describe() + ": read_cached got " + std::to_string(selections.size()) + " selections and " +
                     std::to_string(dests.size()) + " destinations");
  const std::size_t item = dtype().itemsize;
  // Every part reads all of its pieces in one call (its chunks shared by the windows are fetched
  // once); pieces not contiguous in their destination go through scratch buffers.
  struct Scatter {
    PieceLayout layout;
    std::size_t dest = 0;
    Buffer scratch;
  };
  std::vector<std::vector<ArraySelection>> sels(parts_.size());
  std::vector<std::vector<MutableByteView>> views(parts_.size());
  std::vector<Scatter> scatters;
  scatters.reserve(selections.size() * parts_.size());
  for (std::size_t i = 0; i < selections.size(); ++i) {
    for (auto& piece : pieces(selections[i])) {
      const PieceLayout l = layout_of(selections[i], axis_, piece);
      if (l.elements() == 0) continue;
      sels[piece.part].push_back(std::move(piece.selection));
      if (l.contiguous()) {
        views[piece.part].push_back(contiguous_view(l, dests[i], item));
      } else {
        scatters.push_back({l, i, Buffer(l.elements() * item)});
        views[piece.part].push_back(scatters.back().scratch.span());
      }
    }
  }
  for (std::size_t p = 0; p < parts_.size(); ++p)
    if (!sels[p].empty()) parts_[p]->read_cached(sels[p], views[p], cache);
  for (auto& s : scatters) {
    PieceLayout bytes = s.layout;
    bytes.inner *= item;
    bytes.scatter(s.scratch.data(), dests[s.dest].data());
  }
}

std::vector<std::uint64_t> ConcatArray::chunk_starts(std::size_t dim) const {
  if (dim != axis_) return parts_.front()->chunk_starts(dim);
  std::vector<std::uint64_t> starts;
  for (std::size_t p = 0; p < parts_.size(); ++p) {
    if (parts_[p]->shape()[axis_] == 0) continue;
    for (const std::uint64_t b : parts_[p]->chunk_starts(dim)) starts.push_back(offsets_[p] + b);
  }
  if (starts.empty()) starts.push_back(0);
  return starts;
}

std::vector<std::vector<std::uint64_t>> ConcatArray::read_units(std::span<const ArraySelection> selections) const {
  std::vector<std::vector<std::uint64_t>> out;
  for (const auto& selection : selections) {
    for (const auto& piece : pieces(selection)) {
      for (auto unit : parts_[piece.part]->read_units({&piece.selection, 1})) {
        if (axis_ < unit.size()) unit[axis_] += unit_offsets_[piece.part];
        if (std::find(out.begin(), out.end(), unit) == out.end()) out.push_back(std::move(unit));
      }
    }
  }
  return out;
}

std::vector<std::vector<std::vector<std::uint64_t>>> ConcatArray::units_by_part(
    const std::vector<std::vector<std::uint64_t>>& units) const {
  std::vector<std::vector<std::vector<std::uint64_t>>> by_part(parts_.size());
  for (auto unit : units) {
    if (axis_ >= unit.size())
      throw UsageError(describe() + ": a read unit has " + std::to_string(unit.size()) + " indices");
    const auto it = std::upper_bound(unit_offsets_.begin(), unit_offsets_.end() - 1, unit[axis_]);
    const std::size_t part = static_cast<std::size_t>(it - unit_offsets_.begin()) - 1;
    unit[axis_] -= unit_offsets_[part];
    by_part[part].push_back(std::move(unit));
  }
  return by_part;
}

std::vector<std::shared_ptr<const Buffer>> ConcatArray::pin_cached(const std::vector<std::vector<std::uint64_t>>& units,
                                                                   ChunkCache& cache,
                                                                   std::vector<std::vector<std::uint64_t>>& missing) const {
  const auto by_part = units_by_part(units);
  std::vector<std::shared_ptr<const Buffer>> out;
  for (std::size_t p = 0; p < parts_.size(); ++p) {
    if (by_part[p].empty()) continue;
    const std::size_t first_missing = missing.size();
    auto held = parts_[p]->pin_cached(by_part[p], cache, missing);
    out.insert(out.end(), held.begin(), held.end());
    for (std::size_t k = first_missing; k < missing.size(); ++k) missing[k][axis_] += unit_offsets_[p];
  }
  return out;
}

std::vector<std::shared_ptr<const Buffer>> ConcatArray::load_units(const std::vector<std::vector<std::uint64_t>>& units,
                                                                   ChunkCache& cache,
                                                                   const std::atomic<bool>* cancel) const {
  const auto by_part = units_by_part(units);
  std::vector<std::shared_ptr<const Buffer>> out;
  for (std::size_t p = 0; p < parts_.size(); ++p) {
    if (by_part[p].empty()) continue;
    auto loaded = parts_[p]->load_units(by_part[p], cache, cancel);
    out.insert(out.end(), loaded.begin(), loaded.end());
  }
  return out;
}

}  // namespace lazycube
