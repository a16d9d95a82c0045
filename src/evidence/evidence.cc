#include "fleetplan/evidence/evidence.h"

#include <cctype>

#include <fmt/format.h>

#include "fleetplan/core/printable_name.h"
#include "fleetplan/core/calendar.h"
#include "fleetplan/core/digest.h"

namespace fleetplan {
namespace {

bool Digits(std::string_view s, size_t at, size_t n, int64_t& out) {
  if (at + n > s.size()) return false;
  out = 0;
  for (size_t i = at; i < at + n; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
    out = out * 10 + (s[i] - '0');
  }
  return true;
}

Expected<UtcTime> TimeAt(const YamlNode& node) {
  FP_ASSIGN_OR_RETURN(std::string text, node.AsString());
  auto t = ParseUtcTime(text);
  if (!t.ok()) return node.Error(t.status().message());
  return *t;
}

// A revision that pins a digest: the "sha256:<64 hex>" at its end.
std::optional<std::string> PinnedDigest(const std::string& revision) {
  const size_t at = revision.rfind("sha256:");
  if (at == std::string::npos) return std::nullopt;
  return revision.substr(at);
}

}  // namespace

Expected<UtcTime> ParseUtcTime(std::string_view s) {
  const auto bad = [&] {
    return InvalidInput(fmt::format("expected a UTC time such as 2026-11-20T10:00:00Z, got '{}'", s));
  };
  int64_t y, mo, d, h, mi, se;
  if (s.size() < 20 || !Digits(s, 0, 4, y) || s[4] != '-' || !Digits(s, 5, 2, mo) || s[7] != '-' ||
      !Digits(s, 8, 2, d) || (s[10] != 'T' && s[10] != 't') || !Digits(s, 11, 2, h) || s[13] != ':' ||
      !Digits(s, 14, 2, mi) || s[16] != ':' || !Digits(s, 17, 2, se)) {
    return bad();
  }
  // RFC 3339 allows both; evidence times are whole seconds on a clock without leap seconds.
  if (s[19] == '.') {
    return InvalidInput(fmt::format("fractional seconds are not read: evidence times are whole seconds, such as "
                                    "2026-11-20T10:00:00Z, got '{}'",
                                    s));
  }
  if (se == 60) {
    return InvalidInput(fmt::format("a leap second (:60) is not read: write :59 or the next minute, got '{}'", s));
  }
  if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > DaysInMonth(y, mo) || h > 23 ||
      mi > 59 || se > 59) {
    return bad();
  }
  int64_t offset = 0;
  const std::string_view zone = s.substr(19);
  if (zone == "Z" || zone == "z") {
    offset = 0;
  } else {
    int64_t oh, om;
    if (zone.size() != 6 || (zone[0] != '+' && zone[0] != '-') || !Digits(zone, 1, 2, oh) || zone[3] != ':' ||
        !Digits(zone, 4, 2, om) || oh > 23 || om > 59) {
      return bad();
    }
    offset = (zone[0] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
  }
  const int64_t t = DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - offset;
  if (t < 0) return bad();
  return UtcTime{t};
}

std::string FormatUtcTime(UtcTime t) {
  const CivilDate c = CivilFromDays(t.seconds / 86400);
  const int64_t s = t.seconds % 86400;
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", c.year, c.month, c.day, s / 3600, s / 60 % 60, s % 60);
}

Expected<EvidenceHeader> ReadEvidenceHeader(std::string_view bytes, const std::string& display_name) {
  FP_ASSIGN_OR_RETURN(YamlDocument doc, YamlDocument::LoadString(bytes, display_name));
  const YamlNode root = doc.root();
  if (!root.IsMap()) return root.Error("expected an evidence file: a mapping with `evidence:` and `data:` (docs/evidence.md)");
  const YamlNode e = root["evidence"];
  FP_RETURN_IF_ERROR(e.RequirePresent());
  FP_RETURN_IF_ERROR(e.CheckKeys({"kind", "revision", "observed_at", "expires_at", "source"}));
  EvidenceHeader h;
  h.content_digest = DigestOf(bytes);
  FP_RETURN_IF_ERROR(e["kind"].RequirePresent());
  FP_ASSIGN_OR_RETURN(h.kind, e["kind"].AsString());
  if (h.kind.empty()) return e["kind"].Error("expected an evidence kind (a word such as benchmark)");
  if (Status printable = CheckPrintableName(h.kind); !printable.ok()) return e["kind"].Error(printable.message());
  FP_ASSIGN_OR_RETURN(h.revision, e["revision"].StringOr(h.content_digest));
  if (const auto pinned = PinnedDigest(h.revision); !pinned) {
    return e["revision"].Error(fmt::format("a named revision must end in the digest it pins, such as "
                                           "'{}@sha256:<64 hex digits>', got '{}'; without a revision, the revision "
                                           "is the content digest",
                                           h.revision, h.revision));
  } else if (pinned->size() != 71 || pinned->find_first_not_of("0123456789abcdef", 7) != std::string::npos) {
    return e["revision"].Error(fmt::format("expected a revision that pins sha256:<64 lowercase hex digits>, got '{}'",
                                           h.revision));
  } else if (e["revision"].present()) {
    // A file cannot hold its own digest: the pin covers the file as it is without the pin
    // ("@sha256:<hex>", or the bare digest), so a revision is pinned by hashing the file
    // and then appending the pin.
    const std::string pin_text = h.revision.size() > pinned->size() ? "@" + *pinned : *pinned;
    std::string unpinned(bytes);
    const size_t at = unpinned.find(pin_text);
    if (at != std::string::npos) unpinned.erase(at, pin_text.size());
    if (const std::string digest = DigestOf(unpinned); *pinned != digest) {
      return e["revision"].Error(fmt::format(
          "revision pins {} but the file without its pin ('{}') is {}: pin the digest of the file as it is "
          "without the pin",
          *pinned, pin_text, digest));
    }
  }
  FP_RETURN_IF_ERROR(e["observed_at"].RequirePresent());
  FP_ASSIGN_OR_RETURN(h.observed_at, TimeAt(e["observed_at"]));
  if (e["expires_at"].present() && !e["expires_at"].IsNull()) {
    FP_ASSIGN_OR_RETURN(UtcTime exp, TimeAt(e["expires_at"]));
    if (exp <= h.observed_at) {
      return e["expires_at"].Error(fmt::format("expected a time after observed_at ({})", FormatUtcTime(h.observed_at)));
    }
    h.expires_at = exp;
  }
  FP_RETURN_IF_ERROR(e["source"].RequirePresent());
  FP_ASSIGN_OR_RETURN(h.source, e["source"].AsString());
  return h;
}

Expected<EvidenceHeader> ReadEvidenceFile(const std::string& path) {
  FP_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  return ReadEvidenceHeader(bytes, path);
}

std::string_view FreshnessName(Freshness f) {
  static constexpr std::string_view kNames[] = {"fresh", "expired", "not-yet-observed"};
  return kNames[static_cast<int>(f)];
}

FreshnessVerdict JudgeFreshness(const EvidenceHeader& h, UtcTime as_of, std::optional<int64_t> max_age_s,
                                std::string_view name) {
  FreshnessVerdict v;
  v.expires = h.expires_at;
  if (max_age_s) {
    const UtcTime by_age{h.observed_at.seconds + *max_age_s};
    if (!v.expires || by_age < *v.expires) v.expires = by_age;
  }
  if (as_of < h.observed_at) {
    v.state = Freshness::kNotYetObserved;
    v.reason = fmt::format("{} ({}) was observed at {}, after the as-of time {}", name, h.kind,
                           FormatUtcTime(h.observed_at), FormatUtcTime(as_of));
  } else if (v.expires && as_of >= *v.expires) {
    v.state = Freshness::kExpired;
    v.reason = fmt::format("{} ({}) expired at {} ({}), before the as-of time {}", name, h.kind, FormatUtcTime(*v.expires),
                           h.expires_at && *v.expires == *h.expires_at ? "its expires_at" : "the policy's maximum age",
                           FormatUtcTime(as_of));
  }
  return v;
}

Json FreshnessJson(const EvidenceHeader& h, const FreshnessVerdict& v) {
  return {{"kind", h.kind},
          {"revision", h.revision},
          {"content_digest", h.content_digest},
          {"observed_at", FormatUtcTime(h.observed_at)},
          {"expires", v.expires ? Json(FormatUtcTime(*v.expires)) : Json(nullptr)},
          {"source", h.source},
          {"freshness", FreshnessName(v.state)},
          {"reason", v.reason}};
}

}  // namespace fleetplan
