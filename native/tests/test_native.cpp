// Unit tests of the engine's pure parts, with plain checks and clear output.
#include <atomic>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "batching.h"
#include "tokenizer.h"

using namespace rmscore;

static int failures = 0;

#define CHECK(cond)                                                     \
  do {                                                                  \
    if (!(cond)) {                                                      \
      std::fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                       \
    }                                                                   \
  } while (0)

static std::vector<int64_t> seq(size_t n) { return std::vector<int64_t>(n, 7); }

static void test_truncation() {
  auto a = seq(10), b = seq(20);
  truncate_longest_first(a, b, 40);  // fits: unchanged
  CHECK(a.size() == 10 && b.size() == 20);
  a = seq(10), b = seq(600);
  truncate_longest_first(a, b, 509);  // short one fits in half: the long one takes the rest
  CHECK(a.size() == 10 && b.size() == 499);
  a = seq(600), b = seq(10);
  truncate_longest_first(a, b, 509);
  CHECK(a.size() == 499 && b.size() == 10);
  // Both over half: halves, the odd token to the longer one (to the second on a tie); these are
  // the lengths the Hugging Face tokenizers library gives.
  a = seq(300), b = seq(400);
  truncate_longest_first(a, b, 509);
  CHECK(a.size() == 254 && b.size() == 255);
  a = seq(400), b = seq(300);
  truncate_longest_first(a, b, 509);
  CHECK(a.size() == 255 && b.size() == 254);
  a = seq(300), b = seq(300);
  truncate_longest_first(a, b, 509);
  CHECK(a.size() == 254 && b.size() == 255);
  a = seq(300), b = seq(301);
  truncate_longest_first(a, b, 508);
  CHECK(a.size() == 254 && b.size() == 254);
}

static void test_batching() {
  std::vector<size_t> lengths = {50, 10, 40, 20, 30};
  auto none = make_batches(lengths, Strategy::none, 4, 0, 0.0);
  CHECK(none.size() == 5 && none[0] == std::vector<size_t>({0}));
  auto naive = make_batches(lengths, Strategy::naive, 2, 0, 0.0);
  CHECK(naive.size() == 3 && naive[0] == std::vector<size_t>({0, 1}) && naive[2] == std::vector<size_t>({4}));
  auto sorted = make_batches(lengths, Strategy::length_aware, 2, 0, 0.0);
  CHECK(sorted.size() == 3 && sorted[0] == std::vector<size_t>({1, 3}) && sorted[1] == std::vector<size_t>({4, 2}));
  auto budget = make_batches(lengths, Strategy::token_budget, 8, 80, 0.0);
  // sorted 10,20,30,40,50: [10,20,30] costs 3x30=90>80 -> [10,20] (40), [30,40] (80), [50]
  CHECK(budget.size() == 3 && budget[0] == std::vector<size_t>({1, 3}) && budget[1] == std::vector<size_t>({4, 2}));
  CHECK(budget[2] == std::vector<size_t>({0}));
  // sorted 60,61,98,100,200 with 2% waste: 2x61=122 <= 1.02x121; 3x98=294 > 1.02x219 -> new;
  // 2x100=200 <= 1.02x198; 3x200 > 1.02x398 -> new
  std::vector<size_t> close = {100, 98, 60, 61, 200};
  auto bounded = make_batches(close, Strategy::waste_bound, 8, 0, 0.02);
  CHECK(bounded.size() == 3 && bounded[0] == std::vector<size_t>({2, 3}) && bounded[1] == std::vector<size_t>({1, 0}));
  CHECK(make_batches(close, Strategy::waste_bound, 8, 0, 0.0).size() == 5);  // no waste: every length differs
  bool threw = false;
  try {
    parse_strategy("greedy");
  } catch (const std::exception&) {
    threw = true;
  }
  CHECK(threw);
}

static void test_wordpiece() {
  const char* vocab[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello", "world", "!", ",", "un", "##aff", "##able",
                         "cafe", "中", "##s"};
  {
    std::ofstream out("test_vocab.txt");
    for (const char* v : vocab) out << v << "\n";
  }
  auto tok = make_wordpiece("test_vocab.txt", true);
  CHECK(tok->cls_id() == 2 && tok->sep_id() == 3 && tok->pad_id() == 0);
  CHECK(tok->encode("Hello, WORLD!") == std::vector<int64_t>({4, 7, 5, 6}));
  CHECK(tok->encode("unaffable") == std::vector<int64_t>({8, 9, 10}));
  CHECK(tok->encode("Café") == std::vector<int64_t>({11}));       // accents stripped
  CHECK(tok->encode("hello中world") == std::vector<int64_t>({4, 12, 5}));  // CJK spaced out
  CHECK(tok->encode("helloz") == std::vector<int64_t>({1}));        // an unmatched piece: whole word unknown
  CHECK(tok->encode("hello\u200bworld") == std::vector<int64_t>({1}));  // zero-width (Cf) dropped: one unknown word
  CHECK(tok->encode(std::string(101, 'a')) == std::vector<int64_t>({1}));
  CHECK(tok->encode(" \t\n ").empty());
  Encoding e = tok->encode_pair("hello", "world !", 512);
  CHECK(e.input_ids == std::vector<int64_t>({2, 4, 3, 5, 6, 3}));
  CHECK(e.token_type_ids == std::vector<int64_t>({0, 0, 0, 1, 1, 1}));
}

// A protobuf field: key (number, wire type) and a varint value, or a length-delimited message.
static std::string varint_field(int number, unsigned value) {
  return std::string{static_cast<char>(number << 3 & 0x7F | 0x80), static_cast<char>(number >> 4),
                     static_cast<char>(value)};
}
static std::string message_field(int number, const std::string& body) {
  return std::string{static_cast<char>(number << 3 | 2), static_cast<char>(body.size())} + body;
}

static void test_sentencepiece_spec() {
  CHECK(sentencepiece_splits_on_spaces(""));  // every default allows it
  CHECK(sentencepiece_splits_on_spaces(message_field(2, varint_field(22, 1)) + message_field(3, "")));
  CHECK(!sentencepiece_splits_on_spaces(message_field(2, varint_field(22, 0))));  // split_by_whitespace off
  CHECK(!sentencepiece_splits_on_spaces(message_field(2, varint_field(24, 1))));  // whitespace as suffix
  CHECK(!sentencepiece_splits_on_spaces(message_field(2, varint_field(3, 3))));   // a word model
  CHECK(!sentencepiece_splits_on_spaces(message_field(3, varint_field(4, 0))));   // keeps extra spaces
  CHECK(!sentencepiece_splits_on_spaces(std::string("\x12\x7f")));                // truncated
  CHECK(sentencepiece_is_unigram(""));                                           // the default type
  CHECK(sentencepiece_is_unigram(message_field(2, varint_field(3, 1))));
  CHECK(!sentencepiece_is_unigram(message_field(2, varint_field(3, 2))));  // BPE: the library's ids
  CHECK(!sentencepiece_is_unigram(std::string("\x12\x7f")));
}

static void test_word_cache() {
  std::vector<std::string> encoded;  // the words the encoder was asked for
  auto encode = [&](std::string_view word, std::vector<int64_t>& ids) {
    encoded.emplace_back(word);
    ids.push_back(static_cast<int64_t>(word.size()));
  };
  WordCache cache(2);
  std::vector<int64_t> ids;
  cache.encode_words("  ab c ab   dddd c ", ids, encode);
  CHECK((ids == std::vector<int64_t>{2, 1, 2, 4, 1}));  // every word, spaces dropped
  CHECK((encoded == std::vector<std::string>{"ab", "c", "dddd"}));  // full after two: dddd not kept
  ids.clear();
  cache.encode_words("dddd ab", ids, encode);
  CHECK((ids == std::vector<int64_t>{4, 2}) && encoded.size() == 4);

  // Shared by client threads (the concurrency study), also once full: every thread gets every id.
  WordCache shared(3);
  std::atomic<int> calls{0};
  auto count = [&](std::string_view word, std::vector<int64_t>& out) {
    ++calls;
    out.push_back(static_cast<int64_t>(word.size()));
  };
  std::vector<std::vector<int64_t>> got(4);
  std::vector<std::thread> clients;
  for (auto& out : got)
    clients.emplace_back([&] {
      for (int i = 0; i < 200; ++i) shared.encode_words("a bb ccc dddd eeeee", out, count);
    });
  for (auto& client : clients) client.join();
  for (const auto& out : got) {
    bool right = out.size() == 1000;
    for (size_t i = 0; right && i < out.size(); ++i) right = out[i] == static_cast<int64_t>(i % 5 + 1);
    CHECK(right);
  }
  CHECK(calls >= 4 * 200 * 2);  // the two words past capacity are encoded every time
}

int main() {
  test_truncation();
  test_batching();
  test_wordpiece();
  test_sentencepiece_spec();
  test_word_cache();
  if (failures) {
    std::fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  std::printf("native unit tests: all checks passed\n");
  return 0;
}
