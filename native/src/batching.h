// Batching strategies, the same rules as workflow/rmbench/runtimes/batching.py (a test compares them).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace rmscore {

enum class Strategy { none, naive, length_aware, token_budget, waste_bound };

Strategy parse_strategy(const std::string& name);  // none | naive | length-aware | token-budget | waste-bound
std::string strategy_name(Strategy strategy);

// Groups row indices into batches.
//   none:         every row alone, in arrival order
//   naive:        consecutive rows in arrival order, batch_size at a time
//   length_aware: rows sorted by length (stable), batch_size at a time
//   token_budget: rows sorted by length (stable), each batch filled while
//                 rows x longest length <= token_budget and rows <= batch_size
//   waste_bound:  rows sorted by length (stable), each batch filled while its padded tokens
//                 stay within (1 + max_waste) x its real tokens and rows <= batch_size
std::vector<std::vector<size_t>> make_batches(const std::vector<size_t>& lengths, Strategy strategy,
                                              size_t batch_size, size_t token_budget, double max_waste);

}  // namespace rmscore
