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
  if (name == "waste-bound" || name == "waste_bound") return Strategy::waste_bound;
  throw Error(ExitCode::usage,
              "unknown batching strategy '" + name + "' (none | naive | length-aware | token-budget | waste-bound)");
}

std::string strategy_name(Strategy strategy) {
  switch (strategy) {
    case Strategy::none: return "none";
    case Strategy::naive: return "naive";
    case Strategy::length_aware: return "length_aware";
    case Strategy::token_budget: return "token_budget";
    case Strategy::waste_bound: return "waste_bound";
  }
  return "?";
}

std::vector<std::vector<size_t>> make_batches(const std::vector<size_t>& lengths, Strategy strategy,
                                              size_t batch_size, size_t token_budget, double max_waste) {
  std::vector<size_t> order(lengths.size());
  std::iota(order.begin(), order.end(), 0);
  if (strategy == Strategy::none) batch_size = 1;
  if (strategy == Strategy::length_aware || strategy == Strategy::token_budget || strategy == Strategy::waste_bound)
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return lengths[a] < lengths[b]; });
  std::vector<std::vector<size_t>> batches;
  size_t real = 0;  // the last batch's real tokens
  for (size_t i : order) {
    bool fits = !batches.empty() && batches.back().size() < batch_size;
    size_t longest = lengths[i];  // sorted strategies: the newest row is the longest
    if (fits && strategy == Strategy::token_budget) fits = (batches.back().size() + 1) * longest <= token_budget;
    if (fits && strategy == Strategy::waste_bound)  // the same expression as rmbench.runtimes.batching's
      fits = static_cast<double>((batches.back().size() + 1) * longest) <=
             (1.0 + max_waste) * static_cast<double>(real + longest);
    if (!fits) {
      batches.emplace_back();
      real = 0;
    }
    batches.back().push_back(i);
    real += lengths[i];
  }
  return batches;
}

}  // namespace rmscore
