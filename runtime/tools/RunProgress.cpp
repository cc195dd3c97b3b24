//===- RunProgress.cpp - braid-run's progress lines and metrics -----------===//
//
// RunProgress.h.
//
//===----------------------------------------------------------------------===//

#include "RunProgress.h"

#include "RunData.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <stdexcept>

using namespace braid;
using namespace braid::rt;

namespace {

/// "1:02:03" or "2:03": `seconds` rounded to whole seconds.
std::string clockText(double seconds) {
  long long s = std::llround(std::max(0.0, seconds));
  char text[32];
  if (s >= 3600)
    std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", s / 3600,
                  s / 60 % 60, s % 60);
  else
    std::snprintf(text, sizeof text, "%lld:%02lld", s / 60, s % 60);
  return text;
}

} // namespace

Progress::Progress(const Options &o, const Plan &plan, const Inputs &inputs,
                   int rank)
    : o(o), inputs(inputs),
      active(rank == 0 && (o.logEvery > 0 || !o.metrics.empty())) {
  if (!active)
    return;
  for (const Binding &b : plan.arguments)
    if (auto it = inputs.schedules.find(b.buffer); it != inputs.schedules.end())
      rates.push_back({b.name, &it->second});
  if (inputs.tokens)
    tokensPerStep = inputs.tokens->tokensPerStep();
  if (!o.metrics.empty()) {
    metrics = std::fopen(o.metrics.c_str(), o.resume.empty() ? "w" : "a");
    if (!metrics)
      throw std::runtime_error("cannot write --metrics file '" + o.metrics +
                               "': " + std::strerror(errno));
  }
}

Progress::~Progress() {
  if (metrics)
    std::fclose(metrics);
}

void Progress::evaluation(int64_t taken, double loss) {
  if (!active || !metrics)
    return;
  std::fprintf(metrics, "{\"step\": %lld, \"eval_loss\": %.9g}\n",
               (long long)taken, loss);
  std::fflush(metrics);
}

void Progress::step(int64_t step, double loss, double ms) {
  if (!active)
    return;
  totalMs += ms;
  int64_t taken = inputs.stepsDone + step;
  double eta = totalMs / double(step) * double(inputs.steps - step) / 1e3;
  double tokensPerSecond = ms > 0 ? double(tokensPerStep) / (ms / 1e3) : 0;
  if (metrics) {
    std::fprintf(metrics, "{\"step\": %lld", (long long)taken);
    if (!std::isnan(loss))
      std::fprintf(metrics, ", \"loss\": %.9g", loss);
    std::fprintf(metrics, ", \"ms\": %.4f", ms);
    if (!rates.empty()) {
      std::fputs(", \"lr\": {", metrics);
      for (size_t i = 0; i < rates.size(); ++i)
        std::fprintf(metrics, "%s\"%s\": %.9g", i ? ", " : "",
                     rates[i].first.c_str(),
                     double((*rates[i].second)[size_t(taken - 1)]));
      std::fputc('}', metrics);
    }
    if (tokensPerStep)
      std::fprintf(metrics, ", \"tokens\": %lld, \"tokens_per_s\": %.1f",
                   (long long)tokensPerStep, tokensPerSecond);
    std::fprintf(metrics, ", \"eta_s\": %.3f}\n", eta);
    std::fflush(metrics);
  }
  if (o.logEvery > 0 && (step % o.logEvery == 0 || step == inputs.steps)) {
    std::string line = "progress: step " + std::to_string(taken) + "/" +
                       std::to_string(inputs.stepsDone + inputs.steps);
    char part[64];
    if (!std::isnan(loss)) {
      std::snprintf(part, sizeof part, ", loss %.4f", loss);
      line += part;
    }
    for (const auto &[name, values] : rates) {
      std::snprintf(part, sizeof part, ", %s %.3g", name.c_str(),
                    double((*values)[size_t(taken - 1)]));
      line += part;
    }
    if (tokensPerStep) {
      std::snprintf(part, sizeof part, ", %.0f tokens/s", tokensPerSecond);
      line += part;
    }
    std::snprintf(part, sizeof part, ", %.2f ms/step", ms);
    line += part + std::string(", left ") + clockText(eta);
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }
}
