// SHA-256 digests (OpenSSL EVP) of canonical bytes: the identity of inputs and outputs.
// Sha256Hex gives 64 lowercase hex digits; a digest is "sha256:" + those digits.
// Thread model: pure functions; a Sha256Stream is single-threaded state.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "fleetplan/core/json.h"

namespace fleetplan {

std::string Sha256Hex(std::string_view bytes);         // 64 hex digits
std::string DigestOf(std::string_view bytes);          // "sha256:<hex>"
Expected<std::string> DigestOfJson(const Json& value); // digest of CanonicalJson(value)

// Incremental digest for streamed inputs (traces): the digest of the concatenation of
// every Update. Not copyable.
class Sha256Stream {
 public:
  Sha256Stream();
  ~Sha256Stream();
  Sha256Stream(const Sha256Stream&) = delete;
  Sha256Stream& operator=(const Sha256Stream&) = delete;
  // REQUIRES: FinishDigest() not yet called.
  void Update(std::string_view bytes);
  // "sha256:<hex>". REQUIRES: called once; the stream is spent afterwards.
  std::string FinishDigest();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fleetplan
