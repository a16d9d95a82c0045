// MakeRequestSource: the one entry point from a WorkloadSpec to a request stream.
#include "fleetplan/workload/source.h"

#include "fleetplan/workload/generator.h"
#include "fleetplan/workload/trace.h"
#include "fleetplan/workload/workload_spec.h"

namespace fleetplan {

Expected<std::unique_ptr<RequestSource>> MakeRequestSource(const WorkloadSpec& spec, uint64_t seed,
                                                           const SourceLimits& overrides) {
  if (spec.mode != ArrivalMode::kTrace) {
    FP_ASSIGN_OR_RETURN(std::unique_ptr<GeneratorSource> generator, MakeGenerator(spec, seed, overrides));
    return std::unique_ptr<RequestSource>(std::move(generator));
  }
  FP_ASSERT(spec.trace.has_value());
  TraceReadOptions options = spec.trace->options;
  const bool overridden = overrides.duration || overrides.requests;
  options.until = overridden ? overrides.duration : spec.duration;
  options.max_requests = overridden ? overrides.requests : spec.requests;
  FP_ASSIGN_OR_RETURN(std::unique_ptr<TraceSource> trace, OpenTrace(spec.trace->file, options));
  return std::unique_ptr<RequestSource>(std::move(trace));
}

}  // namespace fleetplan
