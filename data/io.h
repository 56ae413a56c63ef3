// data/io.h — whole-file reads and atomic writes, the only file I/O the data layer does.
//
// Every file this layer writes (token-id cache, sentencepiece model, vocab.txt) goes through
// write_atomic: the bytes go to "<path>.tmp.<pid>", are flushed to disk, and the temp file is
// renamed over <path>. A rename within one folder is atomic on POSIX, so a reader sees the old
// file or the new one, never half of one, even if the writer is killed midway.
#pragma once
#include <filesystem>
#include <string>
#include <string_view>

namespace mase::data {

// The whole file as bytes. IoError "[op] cannot read PATH: reason" when it cannot.
std::string read_file(const std::filesystem::path& path, std::string_view op);

// Writes `bytes` to `path` atomically (see above); creates the parent folder. IoError on
// failure, after removing the temporary file.
void write_atomic(const std::filesystem::path& path, std::string_view bytes, std::string_view op);

}  // namespace mase::data
