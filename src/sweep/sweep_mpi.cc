// Points across MPI ranks (sweep.h). Built with Open MPI when FLEETPLAN_HAVE_MPI is set
// (CMake option FLEETPLAN_MPI); otherwise these entry points report that MPI is absent.
//
// Protocol (tags below): every rank > 0 sends kAsk with the row of the point it just ran
// (empty the first time) and receives kTask with the next index, or kStop. Rank 0 answers
// from the main thread (the only thread that calls MPI: MPI_THREAD_FUNNELED) and runs
// points on a thread of its own from the same queue, so n ranks run n points at once.
#include <fmt/format.h>

#include "fleetplan/sweep/sweep.h"

#ifdef FLEETPLAN_HAVE_MPI
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "fleetplan/sweep/point.h"
#endif

namespace fleetplan {

#ifdef FLEETPLAN_HAVE_MPI
namespace {

constexpr int kAsk = 1;
constexpr int kTask = 2;
constexpr int kStop = 3;

// The queue of indices (positions into `indices`) shared by rank 0's thread and the ranks.
class Queue {
 public:
  explicit Queue(size_t n) : n_(n) {}
  std::optional<size_t> Next() {
    std::lock_guard<std::mutex> lock(mu_);
    if (next_ >= n_) return std::nullopt;
    return next_++;
  }

 private:
  std::mutex mu_;
  size_t n_;
  size_t next_ = 0;
};

// A row's canonical text; a row with no JSON form (a bug) becomes a failed row saying why.
std::string CanonicalText(const Json& row) {
  auto text = CanonicalJson(row);
  if (text.ok()) return *text;
  const Json failed = {
      {"index", row.value("index", int64_t{-1})}, {"status", "failed"}, {"reason", text.status().message()}};
  return failed.dump();
}

// Open MPI's blocking calls poll without sleeping, so a rank waiting in one takes a core
// from the ranks and threads running points (with more ranks than cores, as on a
// 2-core machine, that is a point's core). Waits here test and sleep instead; a 2 ms
// answer delay is nothing against a point's run time.
constexpr auto kPollInterval = std::chrono::milliseconds(2);

void WaitFor(MPI_Request& request, MPI_Status* status) {
  int done = 0;
  while (true) {
    MPI_Test(&request, &done, status);
    if (done) return;
    std::this_thread::sleep_for(kPollInterval);
  }
}

void Worker(const SweepSpec& spec, const std::vector<int64_t>& run) {
  std::string row;
  while (true) {
    MPI_Request sent;
    MPI_Isend(row.data(), static_cast<int>(row.size()), MPI_CHAR, 0, kAsk, MPI_COMM_WORLD, &sent);
    WaitFor(sent, MPI_STATUS_IGNORE);
    int64_t index = -1;
    MPI_Status status;
    MPI_Request answer;
    MPI_Irecv(&index, 1, MPI_INT64_T, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &answer);
    WaitFor(answer, &status);
    if (status.MPI_TAG == kStop) return;
    row = CanonicalText(RunPoint(spec, PointAt(spec, run[static_cast<size_t>(index)])));
  }
}

}  // namespace

bool SweepMpiAvailable() {
  return true;
}

Status MpiInit(int* argc, char*** argv) {
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    return InternalError("MPI_Init_thread failed");
  }
  if (provided < MPI_THREAD_FUNNELED) return InternalError("this MPI library cannot run a worker thread on rank 0");
  return Status::Ok();
}

void MpiFinalize() {
  // Ranks that are done wait here for rank 0's last point: sleeping, not polling.
  MPI_Request barrier;
  MPI_Ibarrier(MPI_COMM_WORLD, &barrier);
  WaitFor(barrier, MPI_STATUS_IGNORE);
  MPI_Finalize();
}

int MpiRank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

Status RunSweepPointsMpi(const SweepSpec& spec, const std::vector<int64_t>& indices, JsonSpool* rows,
                         const PointDoneFn& on_done) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int rank = MpiRank();
  FP_ASSERT((rank == 0) == (rows != nullptr));
  // Rank 0 validates every point first; the others learn which to run from it.
  Status first_error;
  std::vector<int64_t> run;  // indices of valid points, broadcast to every rank
  if (rank == 0) {
    std::vector<std::pair<int64_t, int64_t>> sized;  // (gpus, index) of valid points
    for (size_t i = 0; i < indices.size(); ++i) {
      int64_t gpus = 0;
      std::optional<Json> invalid = CheckPoint(spec, PointAt(spec, indices[i]), &gpus);
      if (invalid) {
        Status put = rows->Put(indices[i], *invalid);
        if (first_error.ok()) first_error = std::move(put);
      } else {
        sized.emplace_back(gpus, indices[i]);
      }
    }
    // Largest fleets first, as on threads (sweep.cc): a short tail.
    std::stable_sort(sized.begin(), sized.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (const auto& [gpus, index] : sized) run.push_back(index);
  }
  int64_t n = static_cast<int64_t>(run.size());
  MPI_Request request;
  MPI_Ibcast(&n, 1, MPI_INT64_T, 0, MPI_COMM_WORLD, &request);
  WaitFor(request, MPI_STATUS_IGNORE);
  run.resize(static_cast<size_t>(n));
  MPI_Ibcast(run.data(), static_cast<int>(n), MPI_INT64_T, 0, MPI_COMM_WORLD, &request);
  WaitFor(request, MPI_STATUS_IGNORE);
  if (rank != 0) {
    Worker(spec, run);
    return Status::Ok();
  }

  std::mutex rows_mu;
  std::atomic<int64_t> done{static_cast<int64_t>(indices.size() - run.size())}, failed{0};
  // `text` is the row's canonical JSON (what a worker sends).
  auto store = [&](const Json& row, std::string_view text) {
    const bool bad = row.value("status", "failed") != "ok";
    const int64_t index = row["index"].get<int64_t>();
    std::lock_guard<std::mutex> lock(rows_mu);
    Status put = rows->PutText(index, text);
    if (first_error.ok()) first_error = std::move(put);
    const int64_t d = ++done;
    const int64_t f = bad ? ++failed : failed.load();
    if (on_done) on_done(d, f);
  };
  if (on_done) on_done(done, failed);
  Queue queue(run.size());
  std::thread local([&] {
    while (auto k = queue.Next()) {
      const std::string text = CanonicalText(RunPoint(spec, PointAt(spec, run[*k])));
      store(Json::parse(text), text);
    }
  });
  int stopped = 0;
  while (stopped < size - 1) {
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, kAsk, MPI_COMM_WORLD, &flag, &status);
    if (!flag) {
      std::this_thread::sleep_for(kPollInterval);  // see WaitFor
      continue;
    }
    int bytes = 0;
    MPI_Get_count(&status, MPI_CHAR, &bytes);
    std::string text(static_cast<size_t>(bytes), '\0');
    MPI_Recv(text.data(), bytes, MPI_CHAR, status.MPI_SOURCE, kAsk, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (!text.empty()) store(Json::parse(text), text);
    if (auto k = queue.Next()) {
      int64_t index = static_cast<int64_t>(*k);
      MPI_Send(&index, 1, MPI_INT64_T, status.MPI_SOURCE, kTask, MPI_COMM_WORLD);
    } else {
      int64_t none = -1;
      MPI_Send(&none, 1, MPI_INT64_T, status.MPI_SOURCE, kStop, MPI_COMM_WORLD);
      ++stopped;
    }
  }
  local.join();
  return first_error;
}

#else

bool SweepMpiAvailable() {
  return false;
}
Status MpiInit(int*, char***) {
  return UsageError("this fleetplan was built without Open MPI (FLEETPLAN_MPI=OFF)");
}
void MpiFinalize() {}
int MpiRank() {
  return 0;
}
Status RunSweepPointsMpi(const SweepSpec&, const std::vector<int64_t>&, JsonSpool*, const PointDoneFn&) {
  return UsageError(
      "--mpi: this fleetplan was built without Open MPI (install libopenmpi-dev and rebuild with FLEETPLAN_MPI=ON)");
}

#endif

}  // namespace fleetplan
