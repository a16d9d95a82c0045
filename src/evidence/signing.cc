#include "fleetplan/evidence/signing.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "fleetplan/core/digest.h"
#include "fleetplan/core/json.h"
#include "fleetplan/core/json_keys.h"
#include "fleetplan/core/limits.h"

namespace fleetplan {
namespace {

constexpr size_t kEd25519PublicBytes = 32;
constexpr size_t kEd25519SignatureBytes = 64;
constexpr const char* kFormat = "fleetplan-signature";
constexpr int64_t kVersion = 1;  // the signature document's version; others are refused

struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;

Expected<Pkey> ReadKey(std::string_view pem, bool is_private) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return Status(StatusCode::kInternal, "cannot allocate a key buffer");
  Pkey key(is_private ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr)
                      : PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr));
  if (!key) {
    return InvalidInput(is_private ? "expected a PEM Ed25519 private key (openssl genpkey -algorithm ed25519)"
                                   : "expected a PEM Ed25519 public key (openssl pkey -pubout)");
  }
  if (EVP_PKEY_id(key.get()) != EVP_PKEY_ED25519) return InvalidInput("expected an Ed25519 key, got another algorithm");
  return key;
}

std::string WritePem(EVP_PKEY* key, bool is_private) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new(BIO_s_mem()));
  const int ok = is_private ? PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr)
                            : PEM_write_bio_PUBKEY(bio.get(), key);
  FP_ASSERT(ok == 1);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

std::string Base64(const std::vector<unsigned char>& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), bytes.data(), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

// Strict: the canonical padded encoding of exactly `expected` bytes. EVP_DecodeBlock also
// takes padding written as data (`AA` for `==`) and unused low bits set, which would let
// two different texts carry one signature; the decoded bytes must encode back to `text`.
std::optional<std::vector<unsigned char>> FromBase64(std::string_view text, size_t expected) {
  if (text.size() != 4 * ((expected + 2) / 3)) return std::nullopt;
  std::vector<unsigned char> out(text.size() / 4 * 3);
  const int n = EVP_DecodeBlock(out.data(), reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return std::nullopt;
  out.resize(expected);  // EVP_DecodeBlock counts the padding as zero bytes
  if (Base64(out) != text) return std::nullopt;
  return out;
}

Expected<std::vector<unsigned char>> RawPublic(EVP_PKEY* key) {
  std::vector<unsigned char> raw(kEd25519PublicBytes);
  size_t len = raw.size();
  if (EVP_PKEY_get_raw_public_key(key, raw.data(), &len) != 1 || len != kEd25519PublicBytes) {
    return InvalidInput("cannot read the Ed25519 public key");
  }
  return raw;
}

std::string KeyIdOfRaw(const std::vector<unsigned char>& raw) {
  return "ed25519:" + Sha256Hex(std::string_view(reinterpret_cast<const char*>(raw.data()), raw.size())).substr(0, 16);
}

Expected<std::string> Statement(std::string_view digest, std::string_view kind) {
  return CanonicalJson(Json{{"algorithm", "ed25519"}, {"digest", digest}, {"kind", kind}});
}

}  // namespace

Expected<KeyPair> GenerateEd25519Key() {
  std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)> ctx(EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nullptr),
                                                                  &EVP_PKEY_CTX_free);
  EVP_PKEY* raw = nullptr;
  if (!ctx || EVP_PKEY_keygen_init(ctx.get()) != 1 || EVP_PKEY_keygen(ctx.get(), &raw) != 1) {
    return Status(StatusCode::kInternal, "OpenSSL could not generate an Ed25519 key");
  }
  Pkey key(raw);
  return KeyPair{WritePem(key.get(), true), WritePem(key.get(), false)};
}

namespace {

// Creates `path` holding `text`, with `mode` from its first byte on disk, and never
// replaces anything: a temporary file made owner-only by mkstemp in the same folder is
// written, given `mode`, synced, then hard-linked to `path` (link fails when `path`
// exists, even as a dangling link) and removed. A crash leaves at most the temporary.
Status WriteNewFile(const std::string& path, std::string_view text, mode_t mode) {
  const std::filesystem::path target(path);
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  std::string temp = (dir / ("." + target.filename().string() + ".XXXXXX")).string();
  const auto fail = [&](std::string_view what, int err) {
    return InvalidInput(fmt::format("cannot write '{}': {}: {}", path, what, std::generic_category().message(err)));
  };
  const int fd = ::mkstemp(temp.data());  // O_CREAT | O_EXCL, mode 0600
  if (fd < 0) return fail("cannot create a file beside it", errno);
  const auto abandon = [&](std::string_view what, int err) {
    ::close(fd);
    ::unlink(temp.c_str());
    return fail(what, err);
  };
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return abandon("write failed", errno);
    done += static_cast<size_t>(n);
  }
  if (::fchmod(fd, mode) != 0) return abandon("cannot set its mode", errno);
  if (::fsync(fd) != 0) return abandon("cannot sync it", errno);
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    return fail("close failed", err);
  }
  if (::link(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    if (err == EEXIST) return InvalidInput(fmt::format("'{}' exists; a key is never overwritten", path));
    return fail("cannot put it in place", err);
  }
  ::unlink(temp.c_str());
  return Status::Ok();
}

bool Exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;  // a dangling symlink exists too
}

}  // namespace

Status WriteKeyPair(const KeyPair& pair, const std::string& path) {
  const std::string pub = path + ".pub";
  for (const std::string& p : {path, pub}) {
    if (Exists(p)) return InvalidInput(fmt::format("'{}' exists; a key is never overwritten", p));
  }
  FP_RETURN_IF_ERROR(WriteNewFile(path, pair.private_pem, S_IRUSR | S_IWUSR));
  const Status public_written = WriteNewFile(pub, pair.public_pem, S_IRUSR | S_IWUSR | S_IRGRP | S_IROTH);
  if (!public_written.ok()) {
    ::unlink(path.c_str());  // written just now by this call: no pair, no half
    return public_written;
  }
  return Status::Ok();
}

Expected<std::string> ReadPublicKeyFile(const std::string& path) {
  FP_ASSIGN_OR_RETURN(std::string pem, ReadFile(path));
  if (auto id = KeyIdOfPublicPem(pem); !id.ok()) {
    if (pem.find("PRIVATE KEY") != std::string::npos) {
      return InvalidInput(fmt::format("{} is a private key; give the public one ({}.pub, from `fleetplan evidence "
                                      "keygen`)",
                                      path, path));
    }
    return InvalidInput(fmt::format("{}: {}", path, id.status().message()));
  }
  return pem;
}

Expected<std::string> KeyIdOfPublicPem(std::string_view public_pem) {
  FP_ASSIGN_OR_RETURN(Pkey key, ReadKey(public_pem, false));
  FP_ASSIGN_OR_RETURN(auto raw, RawPublic(key.get()));
  return KeyIdOfRaw(raw);
}

Expected<Json> SignEvidence(std::string_view bytes, std::string_view kind, std::string_view private_pem) {
  if (kind.empty()) return InvalidInput("the evidence kind is empty");
  FP_ASSIGN_OR_RETURN(Pkey key, ReadKey(private_pem, true));
  FP_ASSIGN_OR_RETURN(auto pub, RawPublic(key.get()));
  const std::string digest = DigestOf(bytes);
  FP_ASSIGN_OR_RETURN(std::string statement, Statement(digest, kind));
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  std::vector<unsigned char> sig(kEd25519SignatureBytes);
  size_t len = sig.size();
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key.get()) != 1 ||
      EVP_DigestSign(ctx.get(), sig.data(), &len, reinterpret_cast<const unsigned char*>(statement.data()),
                     statement.size()) != 1 ||
      len != kEd25519SignatureBytes) {
    return Status(StatusCode::kInternal, "OpenSSL could not sign");
  }
  return Json{{"format", kFormat},
              {"version", kVersion},
              {"algorithm", "ed25519"},
              {"digest", digest},
              {"kind", kind},
              {"key_id", KeyIdOfRaw(pub)},
              {"public_key", Base64(pub)},
              {"signature", Base64(sig)}};
}

Expected<Json> ParseSignatureDocument(std::string_view text) {
  if (FindJsonNestingBeyond(text) != std::string_view::npos) return InvalidInput(JsonNestingMessage());
  Json doc = Json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return InvalidInput(fmt::format("not a signature document (a {} JSON object, from `fleetplan evidence sign`)", kFormat));
  }
  if (const std::optional<std::string> twice = FindDuplicateJsonKey(text)) {
    return InvalidInput(fmt::format("'{}' is given twice; a signature document names each field once", *twice));
  }
  return doc;
}

Expected<SignatureCheck> VerifyEvidence(std::string_view bytes, const Json& signature, std::string_view public_pem) {
  auto text = [&](const char* key) -> Expected<std::string> {
    if (!signature.is_object() || !signature.contains(key) || !signature[key].is_string()) {
      return InvalidInput(fmt::format("the signature file lacks '{}' (a {} document, from `fleetplan evidence sign`)", key,
                                      kFormat));
    }
    return signature[key].get<std::string>();
  };
  FP_ASSIGN_OR_RETURN(std::string format, text("format"));
  if (format != kFormat) return InvalidInput(fmt::format("expected a {} document, got format '{}'", kFormat, format));
  const auto version = signature.find("version");
  if (version == signature.end() || !version->is_number_integer() || *version != kVersion) {
    return InvalidInput(fmt::format("unsupported signature version {}; this fleetplan reads version {}",
                                    version == signature.end()    ? std::string("(missing)")
                                    : version->is_number() ? version->dump()
                                                           : std::string("(not a number)"),
                                    kVersion));
  }
  FP_ASSIGN_OR_RETURN(std::string algorithm, text("algorithm"));
  if (algorithm != "ed25519") return InvalidInput(fmt::format("unsupported signature algorithm '{}'", algorithm));
  FP_ASSIGN_OR_RETURN(std::string digest, text("digest"));
  FP_ASSIGN_OR_RETURN(std::string kind, text("kind"));
  FP_ASSIGN_OR_RETURN(std::string key_id, text("key_id"));
  FP_ASSIGN_OR_RETURN(std::string sig_text, text("signature"));
  FP_ASSIGN_OR_RETURN(Pkey trusted, ReadKey(public_pem, false));
  FP_ASSIGN_OR_RETURN(auto trusted_raw, RawPublic(trusted.get()));
  SignatureCheck c;
  c.kind = kind;
  c.key_id = key_id;
  if (KeyIdOfRaw(trusted_raw) != key_id) {
    c.reason = fmt::format("signed by {}, not by the trusted key {}", key_id, KeyIdOfRaw(trusted_raw));
    return c;
  }
  if (DigestOf(bytes) != digest) {
    c.reason = fmt::format("the file's content is {}, the signature covers {}: the file changed after it was signed",
                           DigestOf(bytes), digest);
    return c;
  }
  const auto sig = FromBase64(sig_text, kEd25519SignatureBytes);
  if (!sig) return InvalidInput("the signature is not the base64 of 64 bytes");
  FP_ASSIGN_OR_RETURN(std::string statement, Statement(digest, kind));
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, trusted.get()) != 1) {
    return Status(StatusCode::kInternal, "OpenSSL could not start a verification");
  }
  const int ok = EVP_DigestVerify(ctx.get(), sig->data(), sig->size(),
                                  reinterpret_cast<const unsigned char*>(statement.data()), statement.size());
  c.valid = ok == 1;
  if (!c.valid) c.reason = "the signature does not match the statement (digest and kind) under the trusted key";
  return c;
}

}  // namespace fleetplan
