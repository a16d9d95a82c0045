// Trust: which public keys may sign which kind of evidence, and the maximum age of each
// kind — the parts of a trusted policy (a rollout ladder, a plan's policy) that judge
// evidence files.
//
//   trust:   {benchmark: [keys/bench.pub], canary-metrics: [keys/canary.pub]}
//   max_age: {benchmark: 14d, canary-metrics: 24h}
//
// A kind listed under `trust` must come with FILE.sig (signing.h) by one of its keys,
// signed as that kind; unlisted kinds need no signature. Key files resolve against the
// policy's folder.
// Thread model: values and pure functions (the readers read the key files).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fleetplan/core/status.h"
#include "fleetplan/core/yaml.h"

namespace fleetplan {

struct TrustedKey {
  std::string file;  // as written
  std::string pem;
  std::string key_id;
};

struct EvidenceTrust {
  std::vector<std::pair<std::string, std::vector<TrustedKey>>> keys;  // kind -> keys, as written
  std::vector<std::pair<std::string, int64_t>> max_age_s;             // kind -> seconds

  std::optional<int64_t> MaxAgeOf(std::string_view kind) const;
  const std::vector<TrustedKey>* KeysOf(std::string_view kind) const;  // null: unsigned is fine
  bool Trusts(std::string_view key_id) const;  // any kind
};

// Reads `trust` (kind -> list of public key files, named from `dir`) into `out.keys`.
// Located errors: an empty list, an unreadable file, a file that is not an Ed25519 public
// key, and — when `root` is set (a bundle's folder) — a file outside `root`
// (core/contained_path.h).
Status ReadTrustedKeys(const YamlNode& node, const std::string& dir, EvidenceTrust& out, const std::string& root = "");
// Reads `max_age` (kind -> duration) into `out.max_age_s`.
Status ReadMaxAges(const YamlNode& node, EvidenceTrust& out);

struct SignatureVerdict {
  bool trusted = true;        // false: required and missing, invalid or by an untrusted key
  std::string signed_by;      // key id, when a trusted key signed it
  std::string reason;         // why not trusted (one sentence naming the file)
};
// Judges `path` (whose bytes are `bytes`, evidence of `kind`) against `trust`: a kind that
// needs a signature needs `path`.sig, valid, by one of its keys, for this kind.
SignatureVerdict JudgeSignature(const EvidenceTrust& trust, std::string_view kind, std::string_view bytes,
                                const std::string& path);

}  // namespace fleetplan
