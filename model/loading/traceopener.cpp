#include "traceopener.h"

#include "kinetoimport.h"

namespace warpline::model {

TraceStore TraceOpener::open(const std::string& path, const TraceLoader::Options& options) {
    if (KinetoImport::isKinetoTrace(path))
        return KinetoImport::load(path, options);
    return TraceLoader::load(path, options);
}

} // namespace warpline::model
