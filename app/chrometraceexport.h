#pragma once

// ChromeTraceExport: File > Export > Chrome Trace (Perfetto)…: asks for a file name and writes the
// open trace as Chrome trace JSON (model/output/chromeexport.h) with a progress dialog that can
// cancel. Errors are shown in a message box; a cancelled export leaves no file.
//
// Thread affinity: GUI thread (the export runs there, keeping the window painted through the
// progress callback).

#include "trace/loadedtrace.h"

#include <QString>
#include <memory>

class QWidget;

namespace warpline::app {

class ChromeTraceExport {
public:
    // Returns the file written, or an empty string (no trace, dialog cancelled, or failed).
    static QString run(QWidget* parent, const std::shared_ptr<const views::LoadedTrace>& trace);
    // Writes `trace` to `path` without asking; for tests and scripted use. Returns an error
    // message, or an empty string on success.
    static QString write(const model::TraceStore& store, const QString& path,
                         QWidget* progressParent = nullptr);
};

} // namespace warpline::app
