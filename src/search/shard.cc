#include "search/shard.h"

#include <cctype>
#include <string>

#include "common/error.h"

namespace dietcode {

namespace {

// A positive decimal integer of at most 9 digits (no sign, no spaces), or -1.
int parse_count(const std::string& text) {
  if (text.empty() || text.size() > 9) return -1;
  for (char c : text)
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
  return std::stoi(text);
}

}  // namespace

ShardSpec parse_shard(const std::string& text) {
  const size_t slash = text.find('/');
  ShardSpec s;
  if (slash != std::string::npos) {
    s.index = parse_count(text.substr(0, slash));
    s.count = parse_count(text.substr(slash + 1));
  }
  if (slash == std::string::npos || s.index < 1 || s.count < 1 || s.index > s.count)
    throw UserError("--shard: expected I/N with 1 <= I <= N, such as 2/8, got \"" + text + "\"");
  return s;
}

std::vector<ShardPiece> plan_shard(const std::vector<size_t>& instance_counts, ShardSpec shard) {
  const size_t ops = instance_counts.size();
  const size_t n = size_t(shard.count), me = size_t(shard.index - 1);
  std::vector<ShardPiece> pieces;
  if (ops >= n) {
    for (size_t k = me; k < ops; k += n)
      if (instance_counts[k] > 0) pieces.push_back({k, 0, instance_counts[k]});
    return pieces;
  }
  // Shards first_shard .. first_shard + shards_k - 1 (0-based) belong to op k.
  size_t first_shard = 0;
  for (size_t k = 0; k < ops; ++k) {
    const size_t shards_k = n / ops + (k < n % ops ? 1 : 0);
    if (me >= first_shard && me < first_shard + shards_k) {
      const size_t part = me - first_shard, total = instance_counts[k];
      // Range `part` of shards_k near-equal ones: [part * total / shards_k, ...).
      const size_t begin = part * total / shards_k, end = (part + 1) * total / shards_k;
      if (begin < end) pieces.push_back({k, begin, end});
      return pieces;
    }
    first_shard += shards_k;
  }
  return pieces;
}

}  // namespace dietcode
