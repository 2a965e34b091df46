// Writing a whole local file (the CLI's -o outputs: .npy, statistics JSON, references).
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

namespace lazycube {

// Writes the local file `path` with what `fill` writes to the stream. StoreError naming the path
// and the cause (e.g. "No space left on device") when it cannot be created or written; a file
// written in part is removed, so a reader never finds a truncated one under the name.
void write_local_file(const std::string& path, const std::function<void(std::ostream&)>& fill);
void write_local_file(const std::string& path, std::string_view bytes);

}  // namespace lazycube
