// rmscore: scores (prompt, response) rows with a reward model on ONNX Runtime, timing every
// request from raw text to float score, and writes one JSON result.
//
//   rmscore --model model.onnx --tokenizer DIR --input rows.jsonl --output result.json [options]
//   rmscore --model model.onnx --tokenizer DIR --serve [options]   (rows on stdin, scores on stdout)
//
// Exit codes: 0 ok, 2 usage, 3 missing file, 4 malformed input line, 5 model/tokenizer
// mismatch, 6 ONNX Runtime error, 7 no CUDA.
#include <onnxruntime_cxx_api.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "batching.h"
#include "engine.h"
#include "errors.h"
#include "tokenizer.h"

using namespace rmscore;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kUsage = R"(usage: rmscore --model FILE --tokenizer DIR --input FILE --output FILE [options]
       rmscore --model FILE --tokenizer DIR --serve [options]
  --serve                      keep one engine loaded: print {"ready": true}, then answer each JSON row
                               on stdin ({"id", "prompt", "response"}, or {"id", "text"}: a text
                               rendered already, tokenized as it stands) with one line on stdout
                               ({"id", "score", "total_ms"}) until stdin closes
  --device cpu|cuda            execution provider (default cpu)
  --threads N                  intra-op threads (default 0 = ONNX Runtime's choice)
  --warmup N                   untimed warm-up batches first (default 3)
  --batch-size N               rows per batch (default 1)
  --batching S                 none | naive | length-aware | token-budget | waste-bound (default none)
  --token-budget N             rows x longest length per batch, token-budget only (default 4096)
  --max-waste F                padded tokens over real ones at most 1+F per batch, waste-bound only
                               (default 0.02)
  --concurrency N              client threads sending batches at once (default 1)
  --instances shared|independent   one engine for all clients, or one each (default shared)
  --zero-copy on|off           tensors over our buffers, or copied into ORT's (default on)
  --prealloc on|off            reuse input buffers, or allocate per call (default on)
  --io-binding auto|on|off     run through an IoBinding (inputs over our buffers, the output to
                               host memory); auto: on CUDA with --zero-copy on (default auto)
  --max-length N               truncation: a pair longest_first, a chat row from its end (default 512)
  --chat-form FILE             a chat-templated tokenizer's template, compiled by rmbench.models.chat_form
  --wait-for-go                after loading and warm-up, print "ready" and wait for a line on
                               stdin before timing (to start several engine processes at once)
  --tokenize-only              time tokenization alone (no model needed)
  --repeat N                   tokenize-only: passes over the rows (default 5)
  --word-cache N               words a SentencePiece or BPE tokenizer remembers, 0 for none
                               (default 10000, as the Hugging Face tokenizers)
  --dump-tokens FILE           write each row's input_ids/token_type_ids as JSONL and exit
)";

struct Options {
  std::string model, tokenizer, chat_form, input, output, dump_tokens;
  EngineOptions engine;
  size_t warmup = 3, batch_size = 1, token_budget = 4096, concurrency = 1, max_length = 512, repeat = 5;
  size_t word_cache = kDefaultWordCache;
  Strategy batching = Strategy::none;
  double max_waste = 0.02;
  bool independent = false, tokenize_only = false, wait_for_go = false, serve = false;
};

bool on_off(const std::string& flag, const std::string& value) {
  if (value == "on") return true;
  if (value == "off") return false;
  throw Error(ExitCode::usage, flag + " takes on|off, not '" + value + "'");
}

size_t count(const std::string& flag, const std::string& value, size_t minimum) {
  try {
    size_t pos = 0;
    long long v = std::stoll(value, &pos);
    if (pos == value.size() && v >= static_cast<long long>(minimum)) return static_cast<size_t>(v);
  } catch (const std::exception&) {
  }
  throw Error(ExitCode::usage, flag + " takes an integer >= " + std::to_string(minimum) + ", not '" + value + "'");
}

double fraction(const std::string& flag, const std::string& value) {
  try {
    size_t pos = 0;
    double v = std::stod(value, &pos);
    if (pos == value.size() && v >= 0) return v;
  } catch (const std::exception&) {
  }
  throw Error(ExitCode::usage, flag + " takes a number >= 0, not '" + value + "'");
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::cout << kUsage;
      std::exit(0);
    }
    if (flag == "--tokenize-only" || flag == "--wait-for-go" || flag == "--serve") {
      (flag == "--tokenize-only" ? o.tokenize_only : flag == "--serve" ? o.serve : o.wait_for_go) = true;
      continue;
    }
    if (flag.rfind("--", 0) != 0) throw Error(ExitCode::usage, "unexpected argument '" + flag + "'");
    if (i + 1 >= argc) throw Error(ExitCode::usage, flag + " needs a value");
    std::string v = argv[++i];
    if (flag == "--model") o.model = v;
    else if (flag == "--tokenizer") o.tokenizer = v;
    else if (flag == "--chat-form") o.chat_form = v;
    else if (flag == "--input") o.input = v;
    else if (flag == "--output") o.output = v;
    else if (flag == "--dump-tokens") o.dump_tokens = v;
    else if (flag == "--device") o.engine.device = v;
    else if (flag == "--threads") o.engine.intra_op_threads = static_cast<int>(count(flag, v, 0));
    else if (flag == "--warmup") o.warmup = count(flag, v, 0);
    else if (flag == "--batch-size") o.batch_size = count(flag, v, 1);
    else if (flag == "--batching") o.batching = parse_strategy(v);
    else if (flag == "--token-budget") o.token_budget = count(flag, v, 1);
    else if (flag == "--max-waste") o.max_waste = fraction(flag, v);
    else if (flag == "--concurrency") o.concurrency = count(flag, v, 1);
    else if (flag == "--instances") {
      if (v != "shared" && v != "independent") throw Error(ExitCode::usage, "--instances takes shared|independent");
      o.independent = v == "independent";
    } else if (flag == "--zero-copy") o.engine.zero_copy = on_off(flag, v);
    else if (flag == "--prealloc") o.engine.preallocate = on_off(flag, v);
    else if (flag == "--io-binding") {
      if (v != "auto" && v != "on" && v != "off") throw Error(ExitCode::usage, "--io-binding takes auto|on|off, not '" + v + "'");
      o.engine.io_binding = v;
    }
    else if (flag == "--max-length") o.max_length = count(flag, v, 3);
    else if (flag == "--repeat") o.repeat = count(flag, v, 1);
    else if (flag == "--word-cache") o.word_cache = count(flag, v, 0);
    else throw Error(ExitCode::usage, "unknown option '" + flag + "' (see --help)");
  }
  if (o.serve) {
    if (o.tokenizer.empty() || o.model.empty()) throw Error(ExitCode::usage, "--serve needs --model and --tokenizer (see --help)");
    return o;
  }
  if (o.tokenizer.empty() || o.input.empty()) throw Error(ExitCode::usage, "--tokenizer and --input are required (see --help)");
  bool scoring = !o.tokenize_only && o.dump_tokens.empty();
  if (scoring && o.model.empty()) throw Error(ExitCode::usage, "--model is required (see --help)");
  if (o.dump_tokens.empty() && o.output.empty()) throw Error(ExitCode::usage, "--output is required (see --help)");
  return o;
}

// A (prompt, response) pair, or a text its sender rendered already (a trainer's templated
// conversation), tokenized as it stands.
struct Row {
  std::string id, prompt, response, text;
  bool rendered = false;
};

Encoding encode(const Tokenizer& tok, const Row& row, size_t max_length) {
  return row.rendered ? tok.encode_text(row.text, max_length) : tok.encode_row(row.prompt, row.response, max_length);
}

bool blank(const std::string& line) { return line.find_first_not_of(" \t\r") == std::string::npos; }

// One input line; `where` names it in the error (file:line, or stdin:line).
Row parse_row(const std::string& line, const std::string& where) {
  json j = json::parse(line, nullptr, false);
  auto is_text = [&](const char* key) { return j.is_object() && j.contains(key) && j[key].is_string(); };
  if (j.is_discarded()) throw Error(ExitCode::malformed_input, where + ": malformed JSON");
  if (is_text("id") && is_text("text") && !j.contains("prompt") && !j.contains("response"))
    return {j["id"], "", "", j["text"], true};
  if (!is_text("id") || !is_text("prompt") || !is_text("response"))
    throw Error(ExitCode::malformed_input, where + ": needs string fields id, prompt, response (or id, text)");
  return {j["id"], j["prompt"], j["response"], "", false};
}

std::vector<Row> read_rows(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(ExitCode::missing_file, "input not found: " + path);
  std::vector<Row> rows;
  std::string line;
  for (size_t n = 1; std::getline(in, line); ++n) {
    if (!blank(line)) rows.push_back(parse_row(line, path + ":" + std::to_string(n)));
  }
  return rows;
}

double since_ms(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

void write_json(const json& result, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw Error(ExitCode::missing_file, "cannot write " + path);
  out << result.dump(1) << "\n";
}

void dump_tokens(const Tokenizer& tok, const std::vector<Row>& rows, const Options& o) {
  std::ofstream out(o.dump_tokens);
  if (!out) throw Error(ExitCode::missing_file, "cannot write " + o.dump_tokens);
  for (const auto& row : rows) {
    Encoding e = encode(tok, row, o.max_length);
    out << json{{"id", row.id}, {"input_ids", e.input_ids}, {"token_type_ids", e.token_type_ids}}.dump() << "\n";
  }
}

json tokenize_bench(const Tokenizer& tok, const std::vector<Row>& rows, const Options& o) {
  for (size_t i = 0; i < std::min(o.warmup, rows.size()); ++i) encode(tok, rows[i], o.max_length);
  std::vector<double> us(rows.size(), 0.0), pass_us;
  size_t tokens = 0;
  for (size_t pass = 0; pass < o.repeat; ++pass) {
    double pass_total = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      auto start = Clock::now();
      Encoding e = encode(tok, rows[i], o.max_length);
      double took = since_ms(start) * 1e3;
      us[i] += took;
      pass_total += took;
      if (pass == 0) tokens += e.size();
    }
    pass_us.push_back(pass_total / static_cast<double>(std::max<size_t>(rows.size(), 1)));
  }
  for (auto& v : us) v /= static_cast<double>(o.repeat);
  // Per pass, the mean per pair: the first pass meets every word for the first time (cold caches).
  return {{"per_pair_us", us}, {"pass_us", pass_us}, {"repeat", o.repeat}, {"tokens", tokens}};
}

struct Request {
  std::vector<size_t> rows;
};

json score_rows(Ort::Env& env, const Tokenizer& tok, const std::vector<Row>& rows, const Options& o) {
  // Engines: one shared by every client, or one per client.
  auto load_start = Clock::now();
  std::vector<std::unique_ptr<Engine>> engines;
  const size_t n_engines = o.independent ? o.concurrency : 1;
  for (size_t i = 0; i < n_engines; ++i) {
    try {
      engines.push_back(std::make_unique<Engine>(env, o.model, o.engine, tok.pad_id()));
    } catch (const Ort::Exception& e) {
      // Which engine failed tells the capacity of the device (e.g. CUDA out of memory at 5 of 8).
      throw Error(ExitCode::runtime, "engine " + std::to_string(i + 1) + " of " + std::to_string(n_engines) +
                                         " failed to load: " + e.what());
    }
  }
  double load_ms = since_ms(load_start);

  // Batches are planned on token lengths (counted once, untimed: it decides grouping only).
  std::vector<size_t> lengths;
  for (const auto& r : rows) lengths.push_back(encode(tok, r, o.max_length).size());
  auto batches = make_batches(lengths, o.batching, o.batch_size, o.token_budget, o.max_waste);

  struct RowResult {
    float score = 0;
    double tokenize_us = 0, infer_ms = 0, total_ms = 0;
    size_t tokens = 0, batch = 0;
  };
  std::vector<RowResult> results(rows.size());
  std::vector<double> batch_ms(batches.size(), 0.0);

  auto run_batch = [&](Engine& engine, Buffers& buffers, size_t b, bool record) {
    auto start = Clock::now();
    std::vector<Encoding> encodings;
    std::vector<double> tok_us;
    for (size_t i : batches[b]) {
      auto t = Clock::now();
      encodings.push_back(encode(tok, rows[i], o.max_length));
      tok_us.push_back(since_ms(t) * 1e3);
    }
    std::vector<const Encoding*> ptrs;
    for (auto& e : encodings) ptrs.push_back(&e);
    auto infer_start = Clock::now();
    std::vector<float> scores = engine.score(ptrs, buffers);
    double infer_ms = since_ms(infer_start), total_ms = since_ms(start);
    if (!record) return;
    batch_ms[b] = total_ms;
    for (size_t k = 0; k < batches[b].size(); ++k) {
      RowResult& r = results[batches[b][k]];
      r = {scores[k], tok_us[k], infer_ms, total_ms, encodings[k].size(), b};
    }
  };

  for (auto& engine : engines) {  // every engine warm: the first timed call of each is no outlier
    Buffers buffers;
    for (size_t b = 0; b < std::min(o.warmup, batches.size()); ++b) run_batch(*engine, buffers, b, false);
  }
  if (o.wait_for_go) {
    std::cout << "ready" << std::endl;
    std::string line;
    if (!std::getline(std::cin, line)) throw Error(ExitCode::usage, "--wait-for-go: stdin closed before the go line");
  }
  std::atomic<size_t> next{0};
  auto wall_start = Clock::now();
  std::vector<std::thread> clients;
  std::vector<std::string> failures(o.concurrency);
  for (size_t c = 0; c < o.concurrency; ++c) {
    clients.emplace_back([&, c] {
      Engine& engine = *engines[o.independent ? c : 0];
      Buffers buffers;
      try {
        for (size_t b = next++; b < batches.size(); b = next++) run_batch(engine, buffers, b, true);
      } catch (const std::exception& e) {
        failures[c] = e.what();
      }
    });
  }
  for (auto& t : clients) t.join();
  double wall_s = since_ms(wall_start) / 1e3;
  for (const auto& f : failures)
    if (!f.empty()) throw Error(f.find("mismatch") != std::string::npos ? ExitCode::mismatch : ExitCode::runtime, f);

  json out_rows = json::array();
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = results[i];
    out_rows.push_back({{"id", rows[i].id}, {"score", r.score}, {"tokenize_us", r.tokenize_us},
                        {"infer_ms", r.infer_ms}, {"total_ms", r.total_ms}, {"tokens", r.tokens}, {"batch", r.batch}});
  }
  return {{"load_ms", load_ms}, {"wall_s", wall_s}, {"rows", out_rows}, {"batch_ms", batch_ms},
          {"batches", batches}, {"engines", engines.size()}, {"inputs", engines[0]->input_names()}};
}

// What every result and the --serve ready line say about the engine: library, tokenizer, options.
json describe(const Tokenizer& tok, const Options& o) {
  return {
      {"engine", "rmscore"},
      {"ort_version", Ort::GetVersionString()},
      {"ort_api", ORT_API_VERSION},
      {"ort_library", ort_library_path()},
      {"tokenizer", tok.kind()},
      {"tokenizer_words", tok.word_mode()},
      {"options",
       {{"device", o.engine.device}, {"intra_op_threads", o.engine.intra_op_threads}, {"inter_op_threads", 1},
        {"warmup", o.warmup}, {"batch_size", o.batch_size}, {"batching", strategy_name(o.batching)},
        {"token_budget", o.token_budget}, {"max_waste", o.max_waste}, {"concurrency", o.concurrency},
        {"instances", o.independent ? "independent" : "shared"}, {"wait_for_go", o.wait_for_go}, {"serve", o.serve},
        {"zero_copy", o.engine.zero_copy},
        {"prealloc", o.engine.preallocate}, {"io_binding", o.engine.uses_io_binding()},
        {"max_length", o.max_length}, {"word_cache", o.word_cache}}},
  };
}

// --serve: one engine stays loaded while a caller sends rows one at a time (a scorer beside a
// rollout generator, a service). Each answer is flushed before the next line is read.
int serve(const Tokenizer& tok, const Options& o) {
  Ort::Env env(ORT_LOGGING_LEVEL_ERROR, "rmscore");
  Engine engine(env, o.model, o.engine, tok.pad_id());
  Buffers buffers;
  json ready = describe(tok, o);
  ready["ready"] = true;
  std::cout << ready.dump() << std::endl;
  std::string line;
  for (size_t n = 1; std::getline(std::cin, line); ++n) {
    if (blank(line)) continue;
    Row row = parse_row(line, "stdin:" + std::to_string(n));
    auto start = Clock::now();
    Encoding e = encode(tok, row, o.max_length);
    float score = engine.score({&e}, buffers)[0];
    std::cout << json{{"id", row.id}, {"score", score}, {"total_ms", since_ms(start)}}.dump() << std::endl;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Options o = parse(argc, argv);
    auto tok = load_tokenizer(o.tokenizer, o.word_cache, o.chat_form);
    // ONNX Runtime's telemetry (a thread queueing events in an SQLite file under ~/.cache and a
    // /tmp/mat-debug-<pid>.log per process) has no place in a timed process: off unless the
    // caller's environment says otherwise (ORT_DISABLE_TELEMETRY=0 keeps it).
    setenv("ORT_DISABLE_TELEMETRY", "1", /*overwrite=*/0);
    if (o.serve) return serve(*tok, o);
    auto rows = read_rows(o.input);
    if (!o.dump_tokens.empty()) {
      dump_tokens(*tok, rows, o);
      return 0;
    }
    json result = describe(*tok, o);
    if (o.tokenize_only) {
      result["tokenize"] = tokenize_bench(*tok, rows, o);
    } else {
      Ort::Env env(ORT_LOGGING_LEVEL_ERROR, "rmscore");
      result.update(score_rows(env, *tok, rows, o));
    }
    write_json(result, o.output);
    return 0;
  } catch (const Error& e) {
    std::cerr << "rmscore: " << e.what() << "\n";
    return static_cast<int>(e.code);
  } catch (const Ort::Exception& e) {
    std::cerr << "rmscore: ONNX Runtime: " << e.what() << "\n";
    return static_cast<int>(ExitCode::runtime);
  } catch (const std::exception& e) {
    std::cerr << "rmscore: " << e.what() << "\n";
    return static_cast<int>(ExitCode::runtime);
  }
}
