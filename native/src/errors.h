// Errors that end the program with a one-line message and a documented exit code.
#pragma once

#include <stdexcept>
#include <string>

namespace rmscore {

enum class ExitCode : int {
  ok = 0,
  usage = 2,            // unknown option or bad option value
  missing_file = 3,     // model, tokenizer or input file not found
  malformed_input = 4,  // a JSONL line that is not a row (its number is in the message)
  mismatch = 5,         // model and tokenizer disagree (e.g. a token id beyond the vocabulary)
  runtime = 6,          // ONNX Runtime failed
  no_device = 7,        // CUDA asked for where this library or machine has none
};

class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& message) : std::runtime_error(message), code(code) {}
  ExitCode code;
};

}  // namespace rmscore
