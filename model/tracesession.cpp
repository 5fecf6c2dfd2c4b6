#include "tracesession.h"

namespace warpline::model {

void TraceSession::setSourcePath(TraceStore& store, const std::string& path) {
    for (TraceSource& source : store.m_sources)
        source.path = path;
}

} // namespace warpline::model
