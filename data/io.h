// data/io.h — whole-file reads, and the atomic writes of the data layer.
//
// Every file this layer writes (token-id cache, sentencepiece model, vocab.txt) goes through
// write_text_atomic (runtime/atomic_file.h, the project's one atomic writer): the bytes go to a
// temporary file, are flushed to disk, and the temporary file is renamed over the path. A
// rename within one folder is atomic on POSIX, so a reader sees the old file or the new one,
// never half of one, even if the writer is killed midway.
#pragma once
#include <filesystem>
#include <string>
#include <string_view>

#include "runtime/atomic_file.h"

namespace mase::data {

// The whole file as bytes. IoError "[op] cannot read PATH: reason" when it cannot.
std::string read_file(const std::filesystem::path& path, std::string_view op);

}  // namespace mase::data
