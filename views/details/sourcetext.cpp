#include "details/sourcetext.h"

#include "timeformat.h"

#include <QFileInfo>
#include <QStringList>
#include <algorithm>

namespace warpline::views {

namespace {

QString qs(const std::string& s) {
    return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

} // namespace

QString SourceText::label(const model::TraceStore& store, uint32_t source) {
    if (source >= store.sources().size())
        return QFileInfo(qs(store.path())).fileName();
    const model::TraceSource& s = store.sources()[source];
    QString out =
        s.rank >= 0 ? QStringLiteral("Rank %1").arg(s.rank) : QFileInfo(qs(s.path)).fileName();
    if (!s.host.empty())
        out += QStringLiteral(" · ") + qs(s.host);
    return out;
}

QString SourceText::devices(const model::TraceStore& store, uint32_t source) {
    QStringList parts;
    for (const model::DeviceInfo& d : store.devices()) {
        if (d.source != source)
            continue;
        const QString name = qs(store.text(d.name));
        parts << (name.isEmpty() ? gpuName(store, d)
                                 : QStringLiteral("%1 %2").arg(gpuName(store, d), name));
    }
    return parts.join(QStringLiteral(", "));
}

QString SourceText::clock(const model::TraceSource& source) {
    const int64_t offset = source.clockOffset;
    const QString shift =
        QStringLiteral("%1%2")
            .arg(offset < 0 ? QStringLiteral("−") : QStringLiteral("+"))
            .arg(TimeFormat::timestamp(double(offset < 0 ? -offset : offset), 1000));
    switch (source.alignment) {
    case model::ClockAlignment::Reference:
        return QStringLiteral("reference clock");
    case model::ClockAlignment::SharedClock:
        return QStringLiteral("clock %1 (shared clock)").arg(shift);
    case model::ClockAlignment::SyncPoint:
        return QStringLiteral("clock %1 (aligned at the first collective)").arg(shift);
    case model::ClockAlignment::WallClock:
        return QStringLiteral("clock %1 (wall clock, approximate)").arg(shift);
    case model::ClockAlignment::Unaligned:
        return QStringLiteral("clock not aligned: times as recorded");
    }
    return {};
}

QString SourceText::detail(const model::TraceStore& store, uint32_t source) {
    QStringList parts;
    if (const QString gpus = devices(store, source); !gpus.isEmpty())
        parts << gpus;
    if (source < store.sources().size())
        parts << clock(store.sources()[source]);
    return parts.join(QStringLiteral(" · "));
}

QString SourceText::summary(const model::TraceStore& store, uint32_t source) {
    const QString rest = detail(store, source);
    return rest.isEmpty() ? label(store, source)
                          : QStringLiteral("%1 · %2").arg(label(store, source), rest);
}

bool SourceText::isUnaligned(const model::TraceSource& source) {
    return source.alignment == model::ClockAlignment::Unaligned;
}

uint32_t SourceText::ofThread(const model::TraceStore& store, uint32_t thread) {
    if (!store.isSession() || thread >= store.threads().size())
        return 0;
    return std::min<uint32_t>(store.threads()[thread].source,
                              static_cast<uint32_t>(store.sources().size() - 1));
}

uint32_t SourceText::ofDevice(const model::TraceStore& store, uint32_t device) {
    if (!store.isSession() || device >= store.devices().size())
        return 0;
    return std::min<uint32_t>(store.devices()[device].source,
                              static_cast<uint32_t>(store.sources().size() - 1));
}

QString SourceText::gpuName(const model::TraceStore& store, const model::DeviceInfo& device) {
    return QStringLiteral("GPU %1").arg(store.isSession() ? device.cudaId : device.id);
}

QString SourceText::deviceLabel(const model::TraceStore& store, const model::DeviceInfo& device) {
    const QString name = qs(store.text(device.name));
    return name.isEmpty() ? gpuName(store, device)
                          : QStringLiteral("%1 · %2").arg(gpuName(store, device), name);
}

QString SourceText::count(const model::TraceStore& store) {
    const auto& sources = store.sources();
    const bool ranks = !sources.empty() && std::all_of(sources.begin(), sources.end(),
                                                       [](const auto& s) { return s.rank >= 0; });
    const auto n = static_cast<qsizetype>(std::max<size_t>(1, sources.size()));
    if (ranks)
        return n == 1 ? QStringLiteral("1 rank") : QStringLiteral("%1 ranks").arg(n);
    return n == 1 ? QStringLiteral("1 trace") : QStringLiteral("%1 traces").arg(n);
}

} // namespace warpline::views
