#include "steprepeats.h"

#include "analysishelpers.h"
#include "communication.h"
#include "saturating.h"
#include "sourcelines.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace warpline::model {

namespace {

constexpr double kMinRepeatMatch = 0.95;
constexpr size_t kMaxSearched = 16384;
// The least share of a rank's GPU ops that the steps found from repeats must have launched.
constexpr double kMinLoopLaunchShare = 0.10;

// Whether the `count` launches from `a` and those from `b` start the same GPU ops, in order (both
// runs within `seq`).
bool sameLaunches(const std::vector<Launch>& seq, size_t a, size_t b, size_t count) {
    return std::equal(seq.begin() + a, seq.begin() + a + count, seq.begin() + b,
                      [](const Launch& x, const Launch& y) { return x.key == y.key; });
}

// The smallest period under which the searched part of `seq` repeats; 0 when none does.
size_t repeatPeriod(const std::vector<Launch>& seq, size_t begin, size_t end) {
    const size_t length = end - begin;
    const size_t maxPeriod = std::min(kMaxPeriod, length / 3);
    for (size_t p = 1; p <= maxPeriod; ++p) {
        const size_t compared = length - p;
        const auto allowed =
            static_cast<size_t>(static_cast<double>(compared) * (1.0 - kMinRepeatMatch));
        size_t mismatches = 0;
        for (size_t i = begin; i + p < end && mismatches <= allowed; ++i)
            mismatches += seq[i].key != seq[i + p].key;
        if (mismatches <= allowed)
            return p;
    }
    return 0;
}

// How a launch sequence repeats: `period` launches a step, found in [begin, end), and (for a
// loop whose steps vary) the name that starts each step.
struct RepeatFit {
    size_t period = 0;
    size_t begin = 0, end = 0;
    NameId anchor = kNoName; // kNoName: chosen from the period (chooseStart)
    size_t from = 0;  // the loop's first launch: the name's occurrences before it are not steps
    double names = 0; // anchorFit: the median number of distinct names in its regular segments
    size_t count = 0, last = 0; // anchorFit: the anchor's occurrences searched, and its last
};

// Which tails of the launches shiftFit searches: the last half, quarter or eighth (a long set-up
// or warm-up before a short loop: a CUDA graph's capture), or ever shorter tails (a loop of a few
// launches a step after minutes of compiling and autotuning: a jitted JAX step is one CUDA graph
// launch and a read-back).
enum class Tails { Long, Short };

// The first of the last n / part of n launches that the shift searches (at most kMaxSearched).
size_t tailBegin(size_t n, size_t part) {
    return std::max(n - n / part, n > kMaxSearched ? n - kMaxSearched : size_t(0));
}

// Where the loop of `fit` starts: walking back from its searched part, the first period that
// less than half repeats the one after it.
size_t loopStart(const std::vector<Launch>& seq, const RepeatFit& fit) {
    size_t from = fit.begin;
    while (from >= fit.period) {
        size_t same = 0;
        for (size_t i = from - fit.period; i < from; ++i)
            same += seq[i].key == seq[i + fit.period].key;
        if (2 * same < fit.period)
            break;
        from -= fit.period;
    }
    return from;
}

// The period from the sequence shifted onto itself, over a tail of the launches; with `teardown`,
// one that ends that many launches before the last (a checksum or a final save after the loop).
std::optional<RepeatFit> shiftFit(const std::vector<Launch>& seq, Tails tails = Tails::Long,
                                  size_t teardown = 0) {
    if (seq.size() < 2 * teardown)
        return std::nullopt;
    const size_t n = seq.size() - teardown;
    const size_t lastPart = tails == Tails::Long ? 8 : n / kMinPeriod;
    for (size_t part = tails == Tails::Long ? 2 : 16; part <= lastPart; part *= 2) {
        RepeatFit fit;
        fit.end = n;
        fit.begin = tailBegin(n, part);
        if (fit.end - fit.begin < 3 * kMinPeriod)
            break;
        fit.period = repeatPeriod(seq, fit.begin, fit.end);
        if (fit.period == 0)
            continue;
        // One or two launches repeated (one kernel, or a pair alternating) is a launch loop,
        // not a loop of steps: a step starts at least three GPU ops (a graph launch starts
        // many).
        size_t ops = 0;
        for (size_t i = fit.begin; i < fit.begin + fit.period; ++i)
            ops += seq[i].ops;
        // A short tail is little evidence: it must hold eight periods, a long one three.
        const size_t repeats = tails == Tails::Long ? 3 : 8;
        if (ops < kMinPeriod || (fit.end - fit.begin) / fit.period < repeats)
            continue;
        // The loop starts where its periods stop repeating, walking back: the set-up before it
        // may launch the same names (an autotuner's candidates).
        if (tails == Tails::Short)
            fit.from = loopStart(seq, fit);
        return fit;
    }
    return std::nullopt;
}

// The shift searches after the long tails: a short loop at the end of a long set-up (XLA's
// autotuning before a jitted step), then a loop followed by a tear-down that does not repeat: a
// checksum, a final save, or a final evaluation of a thousand launches after a long loop (at most
// a sixteenth of the launches: blind18's DNA trainer, 984 after 131k). A short loop at the end
// is a tear-down when the loop before it ran eight times as many periods (blind21's
// constellation: 720 periods of its RK4 since the last screening, then a final screening of 12).
std::optional<RepeatFit> laterShiftFit(const std::vector<Launch>& seq) {
    const std::optional<RepeatFit> shortLoop = shiftFit(seq, Tails::Short);
    // The periods a loop ran, from its first launch to the end of its searched part.
    const auto periods = [](const RepeatFit& f, size_t from) { return (f.end - from) / f.period; };
    for (const size_t teardown : {16, 64, 1024}) {
        if (teardown > 64 && 16 * teardown > seq.size())
            break;
        std::optional<RepeatFit> fit = shiftFit(seq, Tails::Long, teardown);
        if (fit && (!shortLoop || periods(*fit, loopStart(seq, *fit)) >=
                                      8 * periods(*shortLoop, shortLoop->from)))
            return fit;
    }
    return shortLoop;
}

// Whether the period found is that of a loop inside the step: some launch name recurs regularly
// (three times or more) but at most once every four periods of the searched part.
bool innerLoop(const std::vector<Launch>& seq, const RepeatFit& fit) {
    std::unordered_map<NameId, size_t> count;
    for (size_t i = fit.begin; i < fit.end; ++i)
        ++count[seq[i].key];
    const size_t periods = (fit.end - fit.begin) / std::max<size_t>(fit.period, 1);
    return std::any_of(count.begin(), count.end(),
                       [&](const auto& c) { return c.second >= 3 && c.second * 4 <= periods; });
}

bool isOptimizerKernel(const std::string& name) {
    std::string lower = name;
    for (char& c : lower)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const char* word : {"multi_tensor_apply", "adam", "sgd", "optimizer"}) {
        if (lower.find(word) != std::string::npos)
            return true;
    }
    return false;
}

// isOptimizerKernel over a store's names, judged once per name id.
class OptimizerNames {
public:
    explicit OptimizerNames(const TraceStore& store)
        : m_store(store), m_known(store.strings().size(), -1) {}
    bool isName(NameId id) {
        if (id >= m_known.size())
            return false;
        if (m_known[id] < 0)
            m_known[id] = isOptimizerKernel(m_store.text(id)) ? 1 : 0;
        return m_known[id] == 1;
    }

private:
    const TraceStore& m_store;
    std::vector<int8_t> m_known; // -1 not judged yet, else 0 or 1
};

// For a loop whose steps vary (a loss printed every N steps, an evaluation every M, data-dependent
// work), where no shift matches: a name that starts every step. Over the last half of the
// launches, a candidate is a name occurring at least three times whose occurrences cut the
// sequence into segments of near-equal length: at least 80% of them within 25% of the median
// (a step that also logs or evaluates is longer, a few of those pass), its occurrences spread
// over at least half of the searched part. A candidate whose regular segments hold fewer than
// half of the core names (those in 80% of the regular segments of the candidate with the most
// names) is inside a loop within the step (a layer of a model: 12 layers of 5 kernels cut 11
// regular segments and one long one) and is left out; names that come with one input shape
// only are not core. Among the others, a kernel of PyTorch's optimizers first (with gradient
// accumulation, the optimizer runs once per step and the forward kernels once per
// micro-batch), then the shortest median (the step, not a run of steps), then the earliest
// first occurrence.
// `from`: search [from, n) instead of the last half.
std::optional<RepeatFit> anchorFit(const TraceStore& store, const std::vector<Launch>& seq,
                                   std::optional<size_t> from = std::nullopt) {
    constexpr double kMinRegular = 0.8;
    constexpr double kLengthTolerance = 0.25;
    const size_t n = seq.size();
    const size_t begin = from ? std::min(*from, n)
                              : std::max(n / 2, n > kMaxSearched ? n - kMaxSearched : size_t(0));
    std::unordered_map<NameId, std::vector<size_t>> at;
    NameId maxKey = 0;
    for (size_t i = begin; i < n; ++i) {
        at[seq[i].key].push_back(i);
        maxKey = std::max(maxKey, seq[i].key);
    }
    struct Candidate {
        RepeatFit fit;
        double names; // the median number of distinct names in its regular segments
        std::tuple<bool, size_t, size_t> key; // (not optimizer, median, first occurrence)
        const std::vector<size_t>* positions;
        double median;
    };
    std::vector<Candidate> candidates;
    std::vector<int64_t> lengths;
    std::vector<int64_t> namesIn;
    std::vector<uint32_t> seenIn(static_cast<size_t>(maxKey) + 1, 0); // segment stamp per name
    uint32_t stamp = 0;
    // Calls fn(name) once for each distinct name among the launches [a, b).
    const auto eachName = [&](size_t a, size_t b, const auto& fn) {
        ++stamp;
        for (size_t i = a; i < b; ++i) {
            uint32_t& seen = seenIn[seq[i].key];
            if (seen != stamp)
                fn(seq[i].key);
            seen = stamp;
        }
    };
    // Calls fn(from, to) for each regular segment between occurrences `p` (within the length
    // tolerance of `median`).
    const auto eachRegular = [&](const std::vector<size_t>& p, double median, const auto& fn) {
        for (size_t k = 1; k < p.size(); ++k)
            if (std::abs(static_cast<double>(p[k] - p[k - 1]) - median) <=
                kLengthTolerance * median)
                fn(p[k - 1], p[k]);
    };
    for (const auto& [name, positions] : at) {
        if (positions.size() < 3 || positions.size() * kMinPeriod > n - begin)
            continue;
        // A step's name recurs through the searched part, not within one stretch of it (a
        // kernel chosen for one input shape, launched by each layer of one step).
        if (2 * (positions.back() - positions.front()) < n - begin)
            continue;
        lengths.clear();
        for (size_t k = 1; k < positions.size(); ++k)
            lengths.push_back(static_cast<int64_t>(positions[k] - positions[k - 1]));
        std::vector<int64_t> sorted = lengths;
        const double median = medianOf(sorted);
        if (median < static_cast<double>(kMinPeriod))
            continue;
        size_t regular = 0;
        namesIn.clear();
        eachRegular(positions, median, [&](size_t a, size_t b) {
            ++regular;
            int64_t distinct = 0;
            eachName(a, b, [&](NameId) { ++distinct; });
            namesIn.push_back(distinct);
        });
        if (static_cast<double>(regular) < kMinRegular * static_cast<double>(lengths.size()))
            continue;
        const auto period = static_cast<size_t>(std::llround(median));
        RepeatFit fit{period, begin, n, name};
        fit.count = positions.size();
        fit.last = positions.back();
        candidates.push_back({fit,
                              medianOf(namesIn),
                              {!isOptimizerKernel(store.text(name)), period, positions.front()},
                              &positions,
                              median});
    }
    if (candidates.empty())
        return std::nullopt;
    // The richest candidate's core: the names in at least 80% of its regular segments (a
    // step's own names; a name chosen by a shape that varies from step to step is not one).
    const Candidate& rich =
        *std::max_element(candidates.begin(), candidates.end(),
                          [](const Candidate& a, const Candidate& b) { return a.names < b.names; });
    std::vector<uint32_t> segmentsWith(seenIn.size(), 0);
    size_t richSegments = 0;
    eachRegular(*rich.positions, rich.median, [&](size_t a, size_t b) {
        ++richSegments;
        eachName(a, b, [&](NameId name) { ++segmentsWith[name]; });
    });
    std::vector<bool> core(seenIn.size(), false);
    size_t coreSize = 0;
    for (size_t k = 0; k < segmentsWith.size(); ++k) {
        core[k] = segmentsWith[k] > 0 &&
                  static_cast<double>(segmentsWith[k]) >= 0.8 * static_cast<double>(richSegments);
        coreSize += core[k];
    }
    // A candidate whose segments hold fewer than half the core's names repeats inside the step
    // (a layer of a model: 12 layers of 5 kernels cut 11 regular segments and one long one).
    const auto coreShare = [&](const Candidate& c) {
        namesIn.clear();
        eachRegular(*c.positions, c.median, [&](size_t a, size_t b) {
            int64_t n = 0;
            eachName(a, b, [&](NameId name) { n += core[name]; });
            namesIn.push_back(n);
        });
        return coreSize == 0 ? 1.0 : medianOf(namesIn) / static_cast<double>(coreSize);
    };
    const Candidate* best = nullptr;
    for (const Candidate& c : candidates)
        if ((!best || c.key < best->key) && 2 * coreShare(c) >= 1.0)
            best = &c;
    if (!best)
        return std::nullopt;
    RepeatFit fit = best->fit;
    fit.names = best->names;
    return fit;
}

// The launches that start a step: `length` launches from `at`, their names in that order.
struct StepStart {
    size_t at = 0;
    size_t length = 0; // 0: none
};

// The longest run of launches that StepStart may be: a step of identical inner iterations (12
// orbital shells, each the same 145 launches, nothing launched once a step) has no name of its
// own, but a few consecutive names occur once in it (where one iteration's last launches meet
// the next one's first).
constexpr size_t kMaxStartLength = 8;

// The names of `length` launches from `i`, as one value (equal runs give equal values; distinct
// runs almost always differ, and cutSteps compares the launches themselves).
uint64_t runKey(const std::vector<Launch>& seq, size_t i, size_t length) {
    uint64_t h = 0;
    for (size_t k = i; k < i + length; ++k)
        h = (h ^ seq[k].key) * 0x100000001b3ULL + 0x9e3779b97f4a7c15ULL;
    return h;
}

// The step's first launches for a loop that repeats exactly: a name that occurs once per period,
// else the shortest run of names that does; of those, the one closest after the rank's sync
// stalls (a loop that reads its loss back ends each step waiting; counted in launches), then the
// one seen first, then the one after the longest CPU pauses between launches.
StepStart chooseStart(const std::vector<Launch>& seq, const RepeatFit& fit,
                      const std::vector<int64_t>& stallEnds) {
    const size_t period = fit.period, begin = fit.begin, end = fit.end, n = seq.size();
    const auto launchesSinceStall = [&](size_t j) -> size_t {
        auto stall = std::upper_bound(stallEnds.begin(), stallEnds.end(), seq[j].start);
        if (stall == stallEnds.begin())
            return period;
        const auto after = std::upper_bound(seq.begin(), seq.end(), *(stall - 1),
                                            [](int64_t t, const Launch& l) { return t < l.start; });
        return std::min(period, j - std::min<size_t>(j, after - seq.begin()));
    };
    const double periods = static_cast<double>(end - begin) / static_cast<double>(period);
    for (size_t length = 1; length <= kMaxStartLength && length < period; ++length) {
        if (end < begin + period + length)
            break;
        // Once in the first period, and about once a period through the searched part (a first
        // period that overlaps an extra, a log line every N steps, is not every period).
        std::unordered_map<uint64_t, uint32_t> perPeriod, searched;
        for (size_t i = begin; i < begin + period; ++i)
            ++perPeriod[runKey(seq, i, length)];
        for (size_t i = begin; i + length <= end; ++i)
            ++searched[runKey(seq, i, length)];
        // First occurrence in the whole sequence of each run once in the period: without stalls,
        // the loop begins where its first repeated launch does.
        std::unordered_map<uint64_t, size_t> firstSeen;
        for (const auto& [key, count] : perPeriod)
            if (count == 1)
                firstSeen.emplace(key, n);
        for (size_t i = 0; i + length <= n; ++i)
            if (const auto it = firstSeen.find(runKey(seq, i, length));
                it != firstSeen.end() && it->second == n)
                it->second = i;
        StepStart start;
        // (launches since a stall, summed; first occurrence; -pause)
        std::tuple<size_t, size_t, int64_t> best;
        for (size_t o = begin; o < begin + period; ++o) {
            const uint64_t key = runKey(seq, o, length);
            if (perPeriod[key] != 1 || std::abs(static_cast<double>(searched[key]) - periods) >
                                           std::max(1.0, 0.1 * periods))
                continue;
            std::tuple<size_t, size_t, int64_t> score{0, firstSeen[key], 0};
            for (size_t j = std::max<size_t>(o, 1); j < end; j += period) {
                std::get<0>(score) += launchesSinceStall(j);
                std::get<2>(score) -= std::max<int64_t>(0, seq[j].start - seq[j - 1].end);
            }
            if (start.length == 0 || score < best) {
                best = score;
                start = {o, length};
            }
        }
        if (start.length > 0)
            return start;
    }
    return {};
}

// A loop whose launches all look alike (one kernel over and over) but that waits for the GPU at
// the end of each iteration: its sync stalls cut the launches into steps when at least three
// stalls are each preceded by a near-equal number of launches (80% within 25% of the median, at
// least three). A step runs from the end of one stall to the end of the next.
std::vector<Step> stallSteps(const std::vector<Launch>& seq, const std::vector<int64_t>& stallEnds,
                             StepAnalysis& out) {
    std::vector<int64_t> counts; // launches between consecutive stall ends
    std::vector<std::pair<int64_t, int64_t>> spans;
    for (size_t k = 1; k < stallEnds.size(); ++k) {
        const auto from = std::lower_bound(seq.begin(), seq.end(), stallEnds[k - 1],
                                           [](const Launch& l, int64_t t) { return l.start < t; });
        const auto to = std::lower_bound(seq.begin(), seq.end(), stallEnds[k],
                                         [](const Launch& l, int64_t t) { return l.start < t; });
        if (to - from <= 0)
            continue; // two stalls in a row (a copy and its stream's sync): one wait
        counts.push_back(to - from);
        spans.emplace_back(stallEnds[k - 1], stallEnds[k]);
    }
    if (counts.size() < 3)
        return {};
    std::vector<int64_t> sorted = counts;
    const double median = medianOf(sorted);
    size_t regular = 0;
    for (const int64_t c : counts)
        regular += std::abs(static_cast<double>(c) - median) <= 0.25 * median;
    if (median < static_cast<double>(kMinPeriod) ||
        static_cast<double>(regular) < 0.8 * static_cast<double>(counts.size()))
        return {};
    out.period = static_cast<uint32_t>(std::llround(median));
    std::vector<Step> steps;
    for (const auto& [a, b] : spans) {
        Step s;
        s.number = static_cast<int64_t>(steps.size());
        s.start = a;
        s.end = b;
        steps.push_back(s);
    }
    return steps;
}

// Whether steps cut at a name that recurs at a varying spacing look like a loop's: at least half
// of them within a factor of two of their median duration. A loop that logs or evaluates every N
// steps passes; names that recur through a compiler's autotuning (candidates timed one after
// another, microseconds to seconds each) do not.
bool regularDurations(const std::vector<Step>& steps) {
    if (steps.size() < 3)
        return false;
    std::vector<int64_t> durations;
    for (const Step& s : steps)
        durations.push_back(s.duration());
    const double median = medianOf(durations);
    size_t near = 0;
    for (const Step& s : steps) {
        const auto d = static_cast<double>(s.duration());
        near += d >= 0.5 * median && d <= 2.0 * median;
    }
    return 2 * near >= steps.size();
}

std::vector<Step> cutSteps(const TraceStore& store, const SyncStallAnalysis& stalls,
                           const std::vector<Launch>& seq, uint32_t source,
                           const std::vector<int64_t>& stallEnds, const RepeatFit& fit);

// The share of the GPU ops that `all` (a rank's launches, in call order) started whose launch
// starts within the steps, from the first step's start to the last one's end. By ops, not calls:
// a jitted JAX step is one graph launch of many kernels after thousands of autotuning launches.
double launchShare(const std::vector<Launch>& all, const std::vector<Step>& steps) {
    uint64_t ops = 0, inSteps = 0;
    for (const Launch& l : all) {
        ops += l.ops;
        if (!steps.empty() && l.start >= steps.front().start && l.start < steps.back().end)
            inSteps += l.ops;
    }
    return ops == 0 ? 0.0 : static_cast<double>(inSteps) / static_cast<double>(ops);
}

// A training loop whose steps vary too much to repeat or to be cut at a regular name (batches
// of varying shape: blind19's CRNN over text lines of 12 to 70 characters, 1,000 to 6,000
// launches a step) still runs its optimizer once a step. The runs of launches of PyTorch's
// optimizer kernels (isOptimizerKernel; a run ends where more than kOptimizerRunGap other
// launches follow: gradient clipping and the optimizer are one run), at least eight, the first
// to the last spanning at least half of `all`, cut the steps: each from the launch after a run
// to the launch after the next (the last: to its run's end). Empty unless their durations are
// regular (regularDurations).
std::vector<Step> optimizerSteps(const TraceStore& store, const std::vector<Launch>& all) {
    constexpr size_t kOptimizerRunGap = 64;
    constexpr size_t kMinRuns = 8;
    OptimizerNames optimizer(store);
    std::vector<size_t> runEnds; // the last launch of each run
    for (size_t i = 0; i < all.size(); ++i) {
        if (!optimizer.isName(all[i].key))
            continue;
        if (!runEnds.empty() && i - runEnds.back() <= kOptimizerRunGap)
            runEnds.back() = i;
        else
            runEnds.push_back(i);
    }
    if (runEnds.size() < kMinRuns || 2 * (runEnds.back() - runEnds.front()) < all.size())
        return {};
    std::vector<Step> steps;
    for (size_t k = 1; k < runEnds.size(); ++k) {
        Step s;
        s.number = static_cast<int64_t>(steps.size());
        s.start = all[runEnds[k - 1] + 1].start;
        if (runEnds[k] + 1 < all.size()) {
            s.end = all[runEnds[k] + 1].start;
        } else {
            for (size_t i = runEnds[k - 1] + 1; i <= runEnds[k]; ++i)
                s.end = std::max({s.end, all[i].end, all[i].opEnd});
        }
        steps.push_back(s);
    }
    return regularDurations(steps) ? steps : std::vector<Step>{};
}

// The steps from `steps[0]` to each of `unitEnds` (inclusive), one merged step each.
std::vector<Step> mergeUnits(const std::vector<Step>& steps, const std::vector<size_t>& unitEnds) {
    std::vector<Step> merged;
    size_t begin = 0;
    for (const size_t end : unitEnds) {
        Step s;
        s.number = static_cast<int64_t>(merged.size());
        s.start = steps[begin].start;
        s.end = steps[end].end;
        merged.push_back(s);
        begin = end + 1;
    }
    return merged;
}

// A loop inside the step whose step is longer than the launches the shift searches (an ODE
// solver's function evaluations, ~19,600 launches an iteration): cut at the inner period, the
// step's other part (the backward pass, the optimizer) is left in a few long cut steps. When at
// least three cut steps last 10x the median or more, and the optimizer's kernels (launched on
// any of the rank's threads) are in those or in the step right after each, and in at most 1% of
// the others, the optimizer runs once an iteration: each long step (with the one after it when
// that holds the optimizer) ends a step, and the short ones before it join it; those after the
// last are left out.
std::vector<Step> mergeInnerLoop(const TraceStore& store, uint32_t source,
                                 std::vector<Step> steps) {
    if (steps.size() < 8)
        return steps;
    std::vector<int64_t> durations;
    for (const Step& s : steps)
        durations.push_back(s.duration());
    const double median = medianOf(durations);
    std::vector<bool> isLong(steps.size());
    size_t longs = 0;
    for (size_t k = 0; k < steps.size(); ++k) {
        isLong[k] = median > 0 && static_cast<double>(steps[k].duration()) >= 10 * median;
        longs += isLong[k];
    }
    if (longs < 3)
        return steps;
    const std::vector<bool> optimizer = holdsOptimizer(store, launchesOf(store, source), steps);
    std::vector<size_t> unitEnds;
    size_t withOptimizer = 0, stray = 0, shorts = 0;
    for (size_t k = 0; k < steps.size(); ++k) {
        if (!isLong[k]) {
            ++shorts;
            stray += optimizer[k];
            continue;
        }
        size_t end = k;
        bool held = optimizer[k];
        if (!held && k + 1 < steps.size() && !isLong[k + 1] && optimizer[k + 1]) {
            end = k + 1;
            held = true;
        }
        withOptimizer += held;
        unitEnds.push_back(end);
        k = end;
    }
    if (10 * withOptimizer < 8 * unitEnds.size() || 100 * stray > shorts)
        return steps;
    return mergeUnits(steps, unitEnds);
}

// Gradient accumulation cut at the micro-batch: a loop without NVTX that runs its forward and
// backward kernels K times for each optimizer step repeats at the micro-batch, so the launches
// give K steps (or K and a piece) an optimizer step. The optimizer runs once per step: when the
// optimizer's kernels are in at most half of the cut steps, in runs of consecutive steps (an
// optimizer step may be cut in two: the gradient clipping's norms, then Adam), at least three
// runs, and the runs' ends lie a regular number of cut steps apart (80% of the spacings within
// a quarter of their median, or one, the median at least 2), each run's end ends a step and the
// cut steps before it join it; those after the last run (an evaluation at the end) are left
// out. An evaluation every N steps makes a spacing longer: such a step holds it.
// `all`: the rank's launches (holdsOptimizer), asked for only when there are enough steps.
template <typename AllLaunches>
std::vector<Step> mergeAccumulation(const TraceStore& store, const AllLaunches& all,
                                    std::vector<Step> steps) {
    if (steps.size() < 8)
        return steps;
    const std::vector<bool> optimizer = holdsOptimizer(store, all(), steps);
    const auto with = static_cast<size_t>(std::count(optimizer.begin(), optimizer.end(), true));
    if (with == 0 || 2 * with > steps.size())
        return steps;
    std::vector<size_t> unitEnds;
    for (size_t k = 0; k < steps.size(); ++k)
        if (optimizer[k] && (k + 1 == steps.size() || !optimizer[k + 1]))
            unitEnds.push_back(k);
    if (unitEnds.size() < 3)
        return steps;
    std::vector<int64_t> spacings;
    for (size_t i = 1; i < unitEnds.size(); ++i)
        spacings.push_back(static_cast<int64_t>(unitEnds[i] - unitEnds[i - 1]));
    const double median = medianOf(spacings);
    if (median < 2)
        return steps;
    const double tolerance = std::max(1.0, median / 4);
    const auto regular = std::count_if(spacings.begin(), spacings.end(), [&](int64_t g) {
        return std::abs(static_cast<double>(g) - median) <= tolerance;
    });
    if (10 * static_cast<size_t>(regular) < 8 * spacings.size())
        return steps;
    return mergeUnits(steps, unitEnds);
}

// The steps of one launch sequence; empty when it does not repeat.
// `only`: the sequence is that thread's alone (its own stalls count).
std::vector<Step> stepsOfSequence(const TraceStore& store, const SyncStallAnalysis& stalls,
                                  const std::vector<Launch>& seq, uint32_t source,
                                  StepAnalysis& out, uint32_t only = EventRef::kNone) {
    std::vector<int64_t> stallEnds;
    for (const SyncStall& stall : stalls.stalls) {
        if (stall.thread != SyncStall::kNoThread &&
            store.threads()[stall.thread].source == source &&
            (only == EventRef::kNone || stall.thread == only))
            stallEnds.push_back(stall.end);
    }
    std::sort(stallEnds.begin(), stallEnds.end());
    const auto cut = [&](RepeatFit fit) {
        out.period = static_cast<uint32_t>(fit.period);
        if (fit.anchor == kNoName) {
            // The period read as the step's pattern: the first one repeated launch for launch
            // by the next (the searched part may begin inside an extra: a log line every N
            // steps), else the first.
            for (size_t o = fit.begin; o + 2 * fit.period <= fit.end; ++o) {
                if (sameLaunches(seq, o, o + fit.period, fit.period)) {
                    fit.begin = o;
                    break;
                }
            }
        }
        return cutSteps(store, stalls, seq, source, stallEnds, fit);
    };
    std::optional<RepeatFit> fit = shiftFit(seq);
    if (fit && innerLoop(seq, *fit)) {
        // The shift matched a loop inside the step (an RNN cell stepped over time): the
        // optimizer, or whatever runs once per step, starts the steps instead.
        if (std::optional<RepeatFit> outer = anchorFit(store, seq);
            outer && outer->period > 2 * fit->period)
            fit = outer;
    } else if (fit) {
        // A loop that logs every N steps (a loss print's read-back) repeats exactly only every N
        // steps: a shift of one step misaligns after each extra launch. A name that cuts the
        // period into regular segments each holding nearly all of the period's names (80%) is
        // the step's; segments of a loop inside the step hold fewer. The log reads a value back:
        // a period that waits for the GPU less than once every two periods is a step of N
        // identical sub-steps and its own update (blind22's storm surge: 12 sub-steps and the
        // wind forcing, no read-back).
        const auto readsBack = [&](const RepeatFit& f) {
            const auto from =
                std::lower_bound(stallEnds.begin(), stallEnds.end(), seq[f.begin].start);
            const auto to =
                std::upper_bound(stallEnds.begin(), stallEnds.end(), seq[f.end - 1].end);
            return 2 * static_cast<size_t>(to - from) >= (f.end - f.begin) / f.period;
        };
        if (std::optional<RepeatFit> step = anchorFit(store, seq);
            step && 2 * step->period <= fit->period && readsBack(*fit)) {
            std::unordered_set<NameId> inPeriod;
            for (size_t i = fit->begin; i < fit->begin + fit->period && i < seq.size(); ++i)
                inPeriod.insert(seq[i].key);
            if (step->names >= 0.8 * static_cast<double>(inPeriod.size()))
                fit = step;
        }
    }
    // A loop whose steps vary (requests of a few shapes) may repeat exactly only at its end,
    // over a quarter or an eighth of the launches: when a name cuts the last half into steps
    // with regular durations, at least twice as many as the exact tail's, those are the loop's
    // steps (blind16's compiled forecaster: 122 requests for 123, was its last 21).
    if (fit) {
        std::vector<Step> exactSteps = mergeInnerLoop(store, source, cut(*fit));
        if (fit->begin > tailBegin(seq.size(), 2)) {
            if (std::optional<RepeatFit> varying = anchorFit(store, seq)) {
                const uint32_t exactPeriod = out.period;
                std::vector<Step> varyingSteps = cut(*varying);
                if (varyingSteps.size() >= 2 * exactSteps.size() && regularDurations(varyingSteps))
                    return varyingSteps;
                out.period = exactPeriod;
            }
        }
        return exactSteps;
    }
    // Else, in order: a training loop whose steps vary, cut at its optimizer (an evaluation pass
    // after each epoch repeats at the end of the trace too, but is not the step); a short loop at
    // the end of a long set-up (XLA's autotuning before a jitted step); a loop followed by a
    // tear-down that does not repeat; a loop whose steps vary, cut at another name; one loop cut
    // at its syncs. Steps cut at a name must have regular durations.
    std::optional<RepeatFit> varying = anchorFit(store, seq);
    std::vector<Step> varyingSteps;
    if (varying) {
        // A loop after the one found, with more iterations, is the program's: a server warms
        // its model up (a few passes that repeat) and then serves its requests. After the last
        // step's own launches: more than two of its periods later.
        if (seq.size() - varying->last > std::max(8 * kMinPeriod, 2 * varying->period))
            if (std::optional<RepeatFit> later = anchorFit(store, seq, varying->last + 1);
                later && later->count >= 8 && later->count > varying->count) {
                later->from = varying->last + 1;
                varying = later;
            }
        varyingSteps = cut(*varying);
        if (!regularDurations(varyingSteps))
            varying.reset();
        else if (isOptimizerKernel(store.text(varying->anchor)))
            return varyingSteps;
    }
    // ... unless the loop at the end lies inside the last of those steps (the detections of the
    // last image of a loop over images).
    if (fit = laterShiftFit(seq); fit && !(varying && fit->begin > varying->last &&
                                           seq.size() - varying->last <= 2 * varying->period &&
                                           2 * fit->period < varying->period))
        return cut(*fit);
    if (varying)
        return varyingSteps; // out.period is still its period: nothing was cut since
    out.period = 0;
    return stallSteps(seq, stallEnds, out);
}

// The steps of `seq` under `fit`: from each occurrence of the name that starts a step to the
// next.
std::vector<Step> cutSteps(const TraceStore& store, const SyncStallAnalysis& stalls,
                           const std::vector<Launch>& seq, uint32_t source,
                           const std::vector<int64_t>& stallEnds, const RepeatFit& fit) {
    const size_t n = seq.size();
    const size_t period = fit.period;
    std::vector<size_t> occurrences;
    if (fit.anchor != kNoName) {
        for (size_t i = fit.from; i < n; ++i) {
            if (seq[i].key == fit.anchor)
                occurrences.push_back(i);
        }
    } else {
        const StepStart start = chooseStart(seq, fit, stallEnds);
        if (start.length == 0)
            return {};
        const uint64_t key = runKey(seq, start.at, start.length);
        for (size_t i = fit.from; i + start.length <= n; ++i) {
            if (runKey(seq, i, start.length) == key && sameLaunches(seq, i, start.at, start.length))
                occurrences.push_back(i);
        }
    }
    // A step begins at the first launch after the sync stall before its anchor when that lies in
    // the same step: the loop's first launches after reading the loss back need not have names
    // of their own (memsets, an elementwise kernel used again later).
    const auto stepBegin = [&](size_t a, size_t floor) {
        const auto stall = std::upper_bound(stallEnds.begin(), stallEnds.end(), seq[a].start);
        if (stall == stallEnds.begin())
            return a;
        const auto after = std::upper_bound(seq.begin(), seq.end(), *(stall - 1),
                                            [](int64_t t, const Launch& l) { return t < l.start; });
        const auto j = static_cast<size_t>(after - seq.begin());
        return j >= floor && j <= a && a - j < period / 2 ? j : a;
    };
    // A step of a loop that varies may hold an evaluation, a log line or a recompilation: any
    // length then, and as short as a quarter of the median (gradient accumulation to a token
    // budget runs 3 to 7 micro-batches a step).
    const bool exact = fit.anchor == kNoName;
    const size_t longest = exact ? 2 * period : n;
    const size_t shortest = exact ? period / 2 : period / 4;
    // In a loop that repeats exactly, every step resembles the loop's period: more than half of
    // the period's launches (by name, counted with repeats) are among the step's first 2P. A
    // warm-up step that also autotunes holds them all. The name's other occurrences start
    // something else: a set-up that copies weights with the loop's first copy, a checksum after
    // the loop that launches its element-wise kernel again.
    if (exact) {
        // The period's launches per name (NameIds are dense), and what is left of them while a
        // step is compared; restored after each step from the names it visited.
        std::vector<int32_t> pattern(store.strings().size(), 0);
        const auto known = [&](NameId key) { return key < pattern.size(); };
        for (size_t i = fit.begin; i < fit.begin + period; ++i) {
            if (known(seq[i].key))
                ++pattern[seq[i].key];
        }
        std::vector<int32_t> left = pattern;
        const auto resembles = [&](size_t m) {
            const size_t first = occurrences[m];
            const size_t next = m + 1 < occurrences.size() ? occurrences[m + 1] : n;
            const size_t stop = std::min(next, first + 2 * period);
            size_t same = 0;
            for (size_t i = first; i < stop; ++i) {
                if (known(seq[i].key) && left[seq[i].key] > 0) {
                    --left[seq[i].key];
                    ++same;
                }
            }
            for (size_t i = first; i < stop; ++i) {
                if (known(seq[i].key))
                    left[seq[i].key] = pattern[seq[i].key];
            }
            return 2 * same > period;
        };
        std::vector<size_t> kept;
        for (size_t m = 0; m < occurrences.size(); ++m) {
            if (resembles(m))
                kept.push_back(occurrences[m]);
        }
        occurrences = std::move(kept);
    }
    // A longer step of a loop that repeats exactly is one step when its first launches repeat
    // those of the step before, launch for launch: an energy check every 50 steps appended to
    // one; a decoder's prefill (other kernels than its decode steps) joins the decode before it.
    size_t before = n; // the first launch of the last step of the period's length
    const auto extends = [&](size_t first) {
        return exact && before < first && first + period <= n &&
               sameLaunches(seq, first, before, period);
    };
    std::vector<Step> steps;
    for (size_t m = 0; m < occurrences.size(); ++m) {
        const size_t first = occurrences[m];
        const bool last = m + 1 == occurrences.size();
        const size_t next = last ? n : occurrences[m + 1];
        const size_t count = next - first;
        if (count < shortest || (!last && count > longest && !extends(first)))
            continue;
        if (count <= longest)
            before = first;
        Step s;
        s.number = static_cast<int64_t>(steps.size());
        s.start = seq[stepBegin(first, m > 0 ? occurrences[m - 1] + 1 : 0)].start;
        if (!last) {
            s.end = seq[stepBegin(next, first + 1)].start;
        } else {
            const size_t stop = std::min(n, first + period);
            for (size_t i = first; i < stop; ++i)
                s.end = std::max({s.end, seq[i].end, seq[i].opEnd});
            // ... and the wait that reads its result back, before any later launch and within
            // twice the step before's length (the tear-down's own syncs come later).
            int64_t nextLaunch = stop < n ? seq[stop].start : std::numeric_limits<int64_t>::max();
            if (!steps.empty())
                nextLaunch = std::min(nextLaunch, s.start + 2 * steps.back().duration());
            for (const SyncStall& stall : stalls.stalls) {
                if (stall.thread != SyncStall::kNoThread &&
                    store.threads()[stall.thread].source == source && stall.start >= s.start &&
                    stall.start < nextLaunch)
                    s.end = std::max(s.end, stall.end);
            }
        }
        steps.push_back(s);
    }
    return steps;
}

// Of a session's rank: its communication kernels, and how many of `steps` hold the launch of one.
std::pair<size_t, size_t> collectivesInSteps(const TraceStore& store, uint32_t source,
                                             const std::vector<Step>& steps) {
    CommunicationNames names(store);
    std::vector<bool> holds(steps.size(), false);
    size_t kernels = 0;
    for (const GpuTrack& track : store.gpuTracks()) {
        const DeviceInfo* device = store.device(track.deviceId());
        if (!device || device->source != source)
            continue;
        for (size_t i = 0; i < track.size(); ++i) {
            if (track.kind(i) != GpuOpKind::Kernel || !names.isKernel(track, i))
                continue;
            ++kernels;
            const EventRef launch = track.launch(i);
            const int64_t t = launch.valid() ? store.apiTracks()[launch.track].start(launch.index)
                                             : track.start(i);
            if (const std::ptrdiff_t k = stepHolding(steps, t); k >= 0)
                holds[static_cast<size_t>(k)] = true;
        }
    }
    return {kernels, static_cast<size_t>(std::count(holds.begin(), holds.end(), true))};
}

} // namespace

std::vector<Launch> launchesOf(const TraceStore& store, uint32_t source, size_t tail,
                               uint32_t only) {
    // One cursor per API track, at its first launch to take; each track's calls are in start
    // order (spantrack.h), so a k-way merge of the cursors gives the launches in call order
    // without sorting them, written once into storage reserved for all of them.
    struct Cursor {
        const ApiTrack* track;
        size_t at, end;
        uint32_t trackIndex;
    };
    const bool tuningFilter = !store.callchains().empty();
    std::unordered_map<uint32_t, int8_t> tuning;
    std::vector<Cursor> cursors;
    size_t room = 0;
    for (uint32_t th = 0; th < store.threads().size(); ++th) {
        const ThreadInfo& thread = store.threads()[th];
        if (thread.source != source || (only != EventRef::kNone && th != only))
            continue;
        for (const uint32_t t : thread.apiTracks) {
            const ApiTrack& track = store.apiTracks()[t];
            size_t first = 0;
            if (tail > 0) {
                first = track.size();
                for (size_t taken = 0; first > 0 && taken < tail;)
                    taken += !track.gpuOps(--first).empty();
            }
            while (first < track.size() && track.gpuOps(first).empty())
                ++first;
            if (first < track.size()) {
                cursors.push_back({&track, first, track.size(), t});
                room += track.size() - first;
            }
        }
    }
    const auto advance = [](Cursor& c) {
        do
            ++c.at;
        while (c.at < c.end && c.track->gpuOps(c.at).empty());
    };
    // Earlier start first; on a tie, the earlier cursor (thread order, as a stable merge).
    const auto after = [&](size_t x, size_t y) {
        const int64_t sx = cursors[x].track->start(cursors[x].at);
        const int64_t sy = cursors[y].track->start(cursors[y].at);
        return sx != sy ? sx > sy : x > y;
    };
    std::vector<size_t> heap(cursors.size());
    for (size_t k = 0; k < heap.size(); ++k)
        heap[k] = k;
    std::make_heap(heap.begin(), heap.end(), after);
    std::vector<Launch> out;
    out.reserve(room);
    while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), after);
        const size_t k = heap.back();
        heap.pop_back();
        Cursor& c = cursors[k];
        // Take this track's launches while they come before every other track's next one.
        do {
            const ApiTrack& track = *c.track;
            // An autotuner's benchmarking (Python stacks) launches a varying number of candidate
            // kernels: not the program's loop.
            if (tuningFilter &&
                isAutotunerCall(store, {c.trackIndex, static_cast<uint32_t>(c.at)}, tuning)) {
                advance(c);
                continue;
            }
            const auto ops = track.gpuOps(c.at);
            Launch l{track.start(c.at),   track.end(c.at),
                     track.end(c.at),     store.gpuTracks()[ops[0].track].name(ops[0].index),
                     track.threadIndex(), static_cast<uint32_t>(ops.size())};
            for (const EventRef& op : ops)
                l.opEnd = std::max(l.opEnd, store.gpuTracks()[op.track].end(op.index));
            out.push_back(l);
            advance(c);
        } while (c.at < c.end && (heap.empty() || after(heap.front(), k)));
        if (c.at < c.end) {
            heap.push_back(k);
            std::push_heap(heap.begin(), heap.end(), after);
        }
    }
    if (tail > 0 && out.size() > tail)
        out.erase(out.begin(), out.end() - static_cast<std::ptrdiff_t>(tail));
    return out;
}

std::vector<size_t> launchesPerThread(const TraceStore& store, uint32_t source) {
    std::vector<size_t> counts(store.threads().size(), 0);
    for (uint32_t th = 0; th < store.threads().size(); ++th) {
        const ThreadInfo& thread = store.threads()[th];
        if (source != EventRef::kNone && thread.source != source)
            continue;
        for (const uint32_t t : thread.apiTracks) {
            const ApiTrack& track = store.apiTracks()[t];
            for (size_t i = 0; i < track.size(); ++i)
                counts[th] += !track.gpuOps(i).empty();
        }
    }
    return counts;
}

std::vector<bool> holdsOptimizer(const TraceStore& store, const std::vector<Launch>& all,
                                 const std::vector<Step>& steps) {
    OptimizerNames optimizer(store);
    std::vector<bool> out(steps.size());
    for (size_t k = 0; k < steps.size(); ++k) {
        auto it = std::lower_bound(all.begin(), all.end(), steps[k].start,
                                   [](const Launch& l, int64_t t) { return l.start < t; });
        for (; it != all.end() && it->start < steps[k].end && !out[k]; ++it)
            out[k] = optimizer.isName(it->key);
    }
    return out;
}

std::vector<Step> repeatSteps(const TraceStore& store, const SyncStallAnalysis& stalls,
                              StepAnalysis& out) {
    // The rank that launched the most; in a session, the first by launches whose steps mostly
    // hold its collectives (crossrank.h: a rank whose longest loop is a validation only it runs
    // has steps without them), when the busiest rank's do not.
    const std::vector<size_t> perThread = launchesPerThread(store);
    const size_t sources = std::max<size_t>(1, store.sources().size());
    const std::vector<uint32_t> sourceOf = threadSources(store, sources);
    std::vector<size_t> counts(sources, 0);
    for (size_t t = 0; t < perThread.size(); ++t)
        counts[sourceOf[t]] += perThread[t];
    std::vector<uint32_t> order(sources);
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(),
                     [&counts](uint32_t a, uint32_t b) { return counts[a] > counts[b]; });
    StepAnalysis first = out;
    std::vector<Step> steps = repeatStepsOf(store, stalls, order.front(), perThread, first);
    if (sources > 1) {
        const auto [kernels, holding] = collectivesInSteps(store, order.front(), steps);
        if (kernels > 0 && 2 * holding < steps.size()) {
            for (size_t k = 1; k < order.size() && counts[order[k]] > 0; ++k) {
                StepAnalysis other = out;
                std::vector<Step> found = repeatStepsOf(store, stalls, order[k], perThread, other);
                if (found.size() >= 2 &&
                    2 * collectivesInSteps(store, order[k], found).second >= found.size()) {
                    out = std::move(other);
                    return found;
                }
            }
        }
    }
    out = std::move(first);
    return steps;
}

std::vector<Step> repeatStepsOf(const TraceStore& store, const SyncStallAnalysis& stalls,
                                uint32_t source, const std::vector<size_t>& perThread,
                                StepAnalysis& out) {
    const size_t sources = std::max<size_t>(1, store.sources().size());
    const bool session = sources > 1;
    const std::vector<uint32_t> sourceOf = threadSources(store, sources);
    size_t launchingThreads = 0;
    size_t total = 0; // the rank's launches
    size_t most = 0;
    for (size_t t = 0; t < perThread.size(); ++t) {
        if (sourceOf[t] != source || perThread[t] == 0)
            continue;
        total += perThread[t];
        ++launchingThreads;
        if (perThread[t] > most) {
            most = perThread[t];
            out.thread = static_cast<uint32_t>(t);
        }
    }
    // The period first, from the searched tail alone: most traces without steps stop here,
    // without gathering every launch.
    const bool large = total > 2 * kMaxSearched;
    std::vector<Launch> sample = launchesOf(store, source, large ? kMaxSearched : 0);
    if (large) {
        const auto repeats = [&](const std::vector<Launch>& tail) {
            return shiftFit(tail) || laterShiftFit(tail) || anchorFit(store, tail);
        };
        if (!repeats(sample) && (launchingThreads == 1 ||
                                 !repeats(launchesOf(store, source, kMaxSearched, out.thread))))
            return session ? std::vector<Step>{} : optimizerSteps(store, launchesOf(store, source));
    }
    // Threads that launch at the same time each run a loop of their own (worker threads, a
    // thread per GPU stream): their launches interleave launch by launch, and the busiest one's
    // loop comes first. PyTorch's forward and backward threads take turns instead, a few times a
    // step: their launches together are the step. Judged on the searched tail (the steady state).
    size_t switches = 0;
    for (size_t i = 1; i < sample.size(); ++i)
        switches += sample[i].thread != sample[i - 1].thread;
    const bool concurrent = launchingThreads > 1 && switches * 10 > sample.size();
    // Every launch of the rank: the sample itself unless the trace is large, gathered once.
    std::vector<Launch> gathered;
    const auto all = [&]() -> const std::vector<Launch>& {
        if (!large)
            return sample;
        if (gathered.empty())
            gathered = launchesOf(store, source);
        return gathered;
    };
    std::vector<Step> steps;
    if (concurrent)
        steps = stepsOfSequence(store, stalls, launchesOf(store, source, 0, out.thread), source,
                                out, out.thread);
    if (steps.size() < 2)
        steps = stepsOfSequence(store, stalls, all(), source, out);
    if (steps.size() < 2 && launchingThreads > 1 && !concurrent)
        steps = stepsOfSequence(store, stalls, launchesOf(store, source, 0, out.thread), source,
                                out, out.thread);
    // The loop found must be the program's: steps that hold under a tenth of the rank's GPU ops
    // are a loop inside one of its steps or after it (blind19's CRNN: the time steps of the LSTM
    // in its last step, 0.2% of the launches; blind18's traffic trainer: the ticks of its final
    // evaluation, 0.8%). Then its optimizer cuts the steps, if it runs regularly. Not in a
    // session: there a rank whose loop is not the job's (a validation only it runs) takes its
    // steps from another rank (repeatSteps).
    if (!session) {
        if (!steps.empty() && launchShare(all(), steps) < kMinLoopLaunchShare)
            steps.clear();
        if (steps.size() < 2) {
            out.period = 0;
            return optimizerSteps(store, all());
        }
    }
    return mergeAccumulation(store, all, std::move(steps));
}

} // namespace warpline::model
