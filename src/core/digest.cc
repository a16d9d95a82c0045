#include "fleetplan/core/digest.h"

#include <openssl/evp.h>

#include <array>
#include <memory>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace fleetplan {
namespace {

constexpr std::string_view kDigestPrefix = "sha256:";

std::string Hex(const unsigned char* bytes, unsigned int n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (unsigned int i = 0; i < n; ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 0x0F];
  }
  return out;
}

// OpenSSL failures here mean a broken installation (SHA-256 is always available), not
// bad input, so they are assertions.
EVP_MD_CTX* NewContext() {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  FP_ASSERT(ctx != nullptr);
  FP_ASSERT(EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) == 1);
  return ctx;
}

void UpdateContext(EVP_MD_CTX* ctx, std::string_view bytes) {
  FP_ASSERT(EVP_DigestUpdate(ctx, bytes.data(), bytes.size()) == 1);
}

std::string FinishHex(EVP_MD_CTX* ctx) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int n = 0;
  FP_ASSERT(EVP_DigestFinal_ex(ctx, md.data(), &n) == 1);
  return Hex(md.data(), n);
}

}  // namespace

std::string Sha256Hex(std::string_view bytes) {
  EVP_MD_CTX* ctx = NewContext();
  UpdateContext(ctx, bytes);
  std::string hex = FinishHex(ctx);
  EVP_MD_CTX_free(ctx);
  return hex;
}

std::string DigestOf(std::string_view bytes) {
  return fmt::format("{}{}", kDigestPrefix, Sha256Hex(bytes));
}

Expected<std::string> DigestOfJson(const Json& value) {
  FP_ASSIGN_OR_RETURN(const std::string canonical, CanonicalJson(value));
  return DigestOf(canonical);
}

struct Sha256Stream::Impl {
  EVP_MD_CTX* ctx = nullptr;
  bool finished = false;
};

Sha256Stream::Sha256Stream() : impl_(std::make_unique<Impl>(Impl{NewContext(), false})) {}

Sha256Stream::~Sha256Stream() { EVP_MD_CTX_free(impl_->ctx); }

void Sha256Stream::Update(std::string_view bytes) {
  FP_ASSERT(!impl_->finished);
  UpdateContext(impl_->ctx, bytes);
}

std::string Sha256Stream::FinishDigest() {
  FP_ASSERT(!impl_->finished);
  impl_->finished = true;
  return fmt::format("{}{}", kDigestPrefix, FinishHex(impl_->ctx));
}

}  // namespace fleetplan
