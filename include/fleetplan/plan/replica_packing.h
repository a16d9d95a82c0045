// How many complete replicas of one parallel shape (tp ranks per stage × pp stages) a
// cluster holds, on which GPUs, and over which links.
//
// Packing, deterministic, over the healthy GPUs of the given nodes (one GPU type):
//  1. TP groups inside islands: each island (cluster.h) in order of its first node cuts
//     its healthy GPUs (node order, then GPU index) into groups of tp. An island whose own
//     link is slow (a node whose NVLink is down) forms groups only when slow TP links are
//     allowed.
//  2. Only when slow TP links are allowed: the GPUs islands left over, on nodes whose
//     network is up, are pooled in the same order and cut into groups spanning nodes.
//  3. Replicas inside islands first: each island's groups are cut into replicas of pp
//     groups; the groups left over on networked nodes are pooled and cut the same way, so
//     their pipeline handoffs cross the network.
// A replica is only ever counted whole: data parallelism never starts before a complete
// replica (all tp × pp ranks) has its GPUs.
// Links: each group's TP link is the slowest link between any two of its GPUs, each
// replica's PP link the slowest between consecutive stages; the packing reports the
// slowest of each over the replicas it places (the conservative figure for timing).
// Thread model: pure function.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fleetplan/catalog/hardware.h"
#include "fleetplan/plan/cluster.h"

namespace fleetplan {

struct ReplicaShape {
  int64_t tp = 1;
  int64_t pp = 1;
};

// Replicas that survive the worst single loss of each kind of failure domain, without
// moving anything: replicas minus the most replicas touching one node (rack, zone).
struct DomainLoss {
  int64_t node = 0;
  int64_t rack = 0;
  int64_t zone = 0;
};

struct ReplicaPacking {
  int64_t replicas = 0;
  std::vector<std::vector<int64_t>> replica_gpus;  // GPU ids, stage by stage
  std::optional<LinkSpec> tp_link;                 // slowest TP link used (none when tp == 1)
  std::optional<LinkSpec> pp_link;                 // slowest PP link used (none when pp == 1)
  bool tp_over_slow_link = false;                  // some placed group's TP link is slow
  int64_t stranded_gpus = 0;                       // healthy GPUs of the nodes in no replica
  DomainLoss after_loss;
  // When replicas == 0: what stops the first replica, with its numbers.
  std::string no_fit_reason;
};

// `nodes`: indices of the nodes to use (ascending). REQUIRES: shape.tp, shape.pp >= 1.
ReplicaPacking PackReplicas(const Cluster& cluster, const std::vector<int64_t>& nodes, ReplicaShape shape,
                            bool allow_slow_tp);

// "450 GB/s" — a link bandwidth as reasons print it.
std::string FormatBandwidth(double bytes_per_s);

}  // namespace fleetplan
