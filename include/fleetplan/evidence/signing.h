// Ed25519 signatures of evidence (OpenSSL EVP), `fleetplan evidence keygen|sign|verify`.
//
// A signature covers a statement, not raw bytes: the canonical JSON
//   {"algorithm": "ed25519", "digest": "sha256:<file>", "kind": "<evidence kind>"}
// so a key vouches for this content as this kind of evidence; the policy says which keys
// may sign which kinds (a candidate pipeline's key cannot sign policy). The signature file
// (FILE.sig, canonical JSON) holds the statement, the signer's public key and key id, and
// the signature; Ed25519 is deterministic, so signing twice writes the same bytes.
// Keys are PEM: PKCS#8 private keys and SubjectPublicKeyInfo public keys, as
// `openssl genpkey -algorithm ed25519` and `openssl pkey -pubout` write them.
// Thread model: pure functions (WriteKeyPair writes files).
#pragma once

#include <string>
#include <string_view>

#include "fleetplan/core/json.h"
#include "fleetplan/core/status.h"

namespace fleetplan {

struct KeyPair {
  std::string private_pem;
  std::string public_pem;
};
// A fresh key pair (OpenSSL's random source).
Expected<KeyPair> GenerateEd25519Key();
// Writes `pair` as KEY (the private key, mode 0600 from its creation) and KEY.pub (0644).
// Neither file may exist (a dangling link counts): a key is never overwritten, and when
// KEY.pub cannot be written the KEY just written is removed.
Status WriteKeyPair(const KeyPair& pair, const std::string& path);
// "ed25519:" + the first 16 hex digits of SHA-256 over the 32 raw public key bytes.
Expected<std::string> KeyIdOfPublicPem(std::string_view public_pem);
// The PEM text of the public key file at `path`, checked to be one: errors name the file
// (and, for a private key, point at its KEY.pub).
Expected<std::string> ReadPublicKeyFile(const std::string& path);

// The signature document of `bytes` as evidence of `kind`.
Expected<Json> SignEvidence(std::string_view bytes, std::string_view kind, std::string_view private_pem);

struct SignatureCheck {
  bool valid = false;
  std::string key_id;
  std::string kind;
  std::string reason;  // why not valid (digest mismatch, bad signature, untrusted key)
};
// Reads a signature document (FILE.sig): a JSON object nested at most 64 deep with each
// key once (nlohmann would keep the last of two `kind`s). Errors: InvalidInput saying
// what is wrong; the caller names the file.
Expected<Json> ParseSignatureDocument(std::string_view text);

// Checks `signature` against `bytes` and a trusted public key (PEM). The document must be
// version 1 and its signature the canonical base64 of 64 bytes (one text per signature).
// Errors: the signature document or key cannot be read (InvalidInput); a wrong signature
// is a valid result with valid == false.
Expected<SignatureCheck> VerifyEvidence(std::string_view bytes, const Json& signature, std::string_view public_pem);

}  // namespace fleetplan
