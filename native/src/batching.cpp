#include "batching.h"

#include <algorithm>
#include <numeric>

#include "errors.h"

namespace rmscore {

Strategy parse_strategy(const std::string& name) {
  if (name == "none") return Strategy::none;
  if (name == "naive") return Strategy::naive;
  if (name == "length-aware" || name == "length_aware") return Strategy::length_aware;
  if (name == "token-budget" || name == "token_budget") return Strategy::token_budget;
  throw Error(ExitCode::usage, "unknown batching strategy '" + name + "' (none | naive | length-aware | token-budget)");
}

std::string strategy_name(Strategy strategy) {
  switch (strategy) {
    case Strategy::none: return "none";
    case Strategy::naive: return "naive";
    case Strategy::length_aware: return "length_aware";
    case Strategy::token_budget: return "token_budget";
  }
  return "?";
}

std::vector<std::vector<size_t>> make_batches(const std::vector<size_t>& lengths, Strategy strategy,
                                              size_t batch_size, size_t token_budget) {
  std::vector<size_t> order(lengths.size());
  std::iota(order.begin(), order.end(), 0);
  if (strategy == Strategy::none) batch_size = 1;
  if (strategy == Strategy::length_aware || strategy == Strategy::token_budget)
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return lengths[a] < lengths[b]; });
  std::vector<std::vector<size_t>> batches;
  for (size_t i : order) {
    bool fits = !batches.empty() && batches.back().size() < batch_size;
    if (fits && strategy == Strategy::token_budget) {
      size_t longest = lengths[i];  // rows arrive sorted: the newest is the longest
      fits = (batches.back().size() + 1) * longest <= token_budget;
    }
    if (!fits) batches.emplace_back();
    batches.back().push_back(i);
  }
  return batches;
}

}  // namespace rmscore
