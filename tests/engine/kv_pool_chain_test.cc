// The pool's prefix-cache chains against a reference map (identity -> holder), under
// random publish / hit / release / evict / invalidate sequences over a tree of
// identities. Chains branch (several children of one identity), writers publish runs
// that start mid-chain, duplicates stay private, and blocks are evicted in any order, so
// heads are hung off parents that are unpublished and published again. After every
// operation each identity of a random path is looked up the way the engine walks a
// chain, and the invariants are recomputed.
#include <algorithm>
#include <iterator>
#include <map>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "fleetplan/core/rng.h"
#include "fleetplan/engine/kv_pool.h"

namespace fleetplan {
namespace {

struct IdentityTree {
  std::vector<int> parent;  // -1: a chain's first identity
  std::vector<BlockHash> id;
  // Identities from the chain's first to `node`.
  std::vector<int> Path(int node) const {
    std::vector<int> path;
    for (int n = node; n >= 0; n = parent[static_cast<size_t>(n)]) path.insert(path.begin(), n);
    return path;
  }
};

IdentityTree RandomTree(RngStream& rng, int nodes) {
  IdentityTree t;
  for (int n = 0; n < nodes; ++n) {
    // Few roots, short branches and long chains.
    const bool root = n == 0 || rng.NextBelow(8) == 0;
    t.parent.push_back(root ? -1 : n - 1 - static_cast<int>(rng.NextBelow(static_cast<uint64_t>(std::min(n, 3)))));
    t.id.push_back(BlockHash{rng.NextU64(), rng.NextU64()});
  }
  return t;
}

class ChainModel {
 public:
  ChainModel(uint64_t seed, int64_t blocks) : rng_(seed, "kv-pool-chain-test"), pool_(blocks) {
    tree_ = RandomTree(rng_, 60);
  }

  void Step() {
    const uint64_t op = rng_.NextBelow(10);
    if (op < 4) {
      Publish();
    } else if (op < 6) {
      Hit();
    } else if (op < 9) {
      Release();
    } else {
      Invalidate();
    }
  }

  // Every identity on a random path, walked as the engine does: the previous answer is
  // the next parent, a miss included.
  void CheckWalk() {
    const auto path = tree_.Path(static_cast<int>(rng_.NextBelow(tree_.id.size())));
    BlockId parent = kNoBlock;
    for (int n : path) {
      const BlockHash& h = tree_.id[static_cast<size_t>(n)];
      const BlockId found = pool_.FindNext(parent, h);
      ASSERT_EQ(found, Holder(h)) << "identity " << n;
      parent = found;
    }
    ASSERT_EQ(pool_.cached_count(), static_cast<int64_t>(holder_.size()));
    const Status s = pool_.CheckInvariants();
    ASSERT_TRUE(s.ok()) << s.message();
  }

  int64_t published() const { return pool_.published_total(); }
  int64_t heads_hung() const { return hung_; }

 private:
  BlockId Holder(const BlockHash& h) const {
    const auto it = holder_.find(h);
    return it == holder_.end() ? kNoBlock : it->second;
  }

  // A writer computes identities [start, end) of a path itself: allocates, then publishes.
  void Publish() {
    const auto path = tree_.Path(static_cast<int>(rng_.NextBelow(tree_.id.size())));
    const auto start = static_cast<size_t>(rng_.NextBelow(path.size()));
    const size_t count = path.size() - start;
    std::vector<BlockId> blocks;
    if (!pool_.Allocate(static_cast<int64_t>(count), blocks)) return;
    for (BlockId b : blocks) Forget(b);  // reuse evicted whatever was cached there
    std::vector<BlockHash> hashes;
    for (size_t i = start; i < path.size(); ++i) hashes.push_back(tree_.id[static_cast<size_t>(path[i])]);
    const BlockHash* parent_identity = start == 0 ? nullptr : &tree_.id[static_cast<size_t>(path[start - 1])];
    const BlockId parent = parent_identity == nullptr ? kNoBlock : Holder(*parent_identity);
    const CacheTag tag{static_cast<int32_t>(rng_.NextBelow(3)), -1, 0};
    int64_t expected = 0;
    for (size_t i = 0; i < blocks.size(); ++i) {
      if (holder_.emplace(hashes[i], blocks[i]).second) {
        tag_of_[blocks[i]] = tag.ns;
        ++expected;
      }
    }
    ASSERT_EQ(pool_.PublishAll(blocks, hashes, tag, parent, parent_identity), expected);
    for (size_t i = 0; i < blocks.size(); ++i) {
      // A head that does not start its chain: a branch, or a run whose parent is gone.
      if (start + i > 0 && pool_.published(blocks[i]) && pool_.chain_parent(blocks[i]) == kNoBlock) ++hung_;
    }
    writers_.push_back(std::move(blocks));
  }

  // A writer takes a reference on one cached identity.
  void Hit() {
    if (holder_.empty()) return;
    auto it = holder_.begin();
    std::advance(it, static_cast<std::ptrdiff_t>(rng_.NextBelow(holder_.size())));
    pool_.Acquire(it->second);
    writers_.push_back({it->second});
  }

  void Release() {
    if (writers_.empty()) return;
    const auto w = static_cast<std::ptrdiff_t>(rng_.NextBelow(writers_.size()));
    pool_.Release(writers_[static_cast<size_t>(w)]);
    writers_.erase(writers_.begin() + w);
  }

  void Invalidate() {
    const auto ns = static_cast<int32_t>(rng_.NextBelow(3));
    int64_t expected = 0;
    for (auto it = holder_.begin(); it != holder_.end();) {
      if (tag_of_.at(it->second) == ns) {
        tag_of_.erase(it->second);
        it = holder_.erase(it);
        ++expected;
      } else {
        ++it;
      }
    }
    ASSERT_EQ(pool_.Invalidate([ns](const CacheTag& t) { return t.ns == ns; }), expected);
  }

  void Forget(BlockId b) {
    const auto t = tag_of_.find(b);
    if (t == tag_of_.end()) return;
    tag_of_.erase(t);
    for (auto it = holder_.begin(); it != holder_.end(); ++it) {
      if (it->second == b) {
        holder_.erase(it);
        return;
      }
    }
  }

  RngStream rng_;
  KvBlockPool pool_;
  IdentityTree tree_;
  std::map<BlockHash, BlockId> holder_;  // published identities
  std::map<BlockId, int32_t> tag_of_;    // namespace of each published block
  std::vector<std::vector<BlockId>> writers_;
  int64_t hung_ = 0;  // blocks published as heads that do not start their chain
};

TEST(KvPoolChains, FindNextMatchesAReferenceMapUnderRandomOperations) {
  int64_t published = 0;
  int64_t hung = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    // Small pools evict constantly; larger ones keep long chains with many branches.
    ChainModel model(seed, seed % 2 == 0 ? 24 : 160);
    for (int step = 0; step < 1500; ++step) {
      model.Step();
      model.CheckWalk();
      if (::testing::Test::HasFatalFailure()) FAIL() << "seed " << seed << " step " << step;
    }
    published += model.published();
    hung += model.heads_hung();
  }
  // The sequences did exercise what they are for.
  EXPECT_GT(published, 10'000);
  EXPECT_GT(hung, 100);
}

}  // namespace
}  // namespace fleetplan
