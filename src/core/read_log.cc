#include "fleetplan/core/read_log.h"

#include <filesystem>

#include "fleetplan/core/digest.h"

namespace fleetplan {
namespace {

thread_local ReadLog* attached = nullptr;

std::string Normal(std::string_view path) {
  return std::filesystem::path(path).lexically_normal().generic_string();
}

}  // namespace

void ReadLog::NoteRead(std::string_view path, std::string digest) {
  const std::string key = Normal(path);
  std::lock_guard lock(mu_);
  auto [it, added] = files_.try_emplace(key, digest);
  if (added) return;
  if (!it->second) {
    it->second = std::move(digest);
  } else if (*it->second != digest) {
    conflicts_[key] = true;
  }
}

void ReadLog::NoteOpened(std::string_view path) {
  const std::string key = Normal(path);
  std::lock_guard lock(mu_);
  files_.try_emplace(key, std::nullopt);
}

std::vector<ReadLog::Entry> ReadLog::Entries() const {
  std::lock_guard lock(mu_);
  std::vector<Entry> out;
  out.reserve(files_.size());
  for (const auto& [path, digest] : files_) out.push_back(Entry{path, digest});
  return out;
}

std::vector<std::string> ReadLog::Conflicts() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [path, _] : conflicts_) out.push_back(path);
  return out;
}

ReadLog* ReadLog::Current() {
  return attached;
}

ReadLogScope::ReadLogScope(ReadLog* log) : previous_(attached) {
  attached = log;
}

ReadLogScope::~ReadLogScope() {
  attached = previous_;
}

void NoteFileRead(std::string_view path, std::string_view bytes) {
  if (attached != nullptr) attached->NoteRead(path, DigestOf(bytes));
}

void NoteFileOpened(std::string_view path) {
  if (attached != nullptr) attached->NoteOpened(path);
}

}  // namespace fleetplan
