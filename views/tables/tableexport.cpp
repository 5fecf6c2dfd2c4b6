#include "tables/tableexport.h"

#include "outputfile.h"
#include "tables/tablemodel.h"

#include <QFile>
#include <QFileInfo>
#include <sstream>

namespace warpline::views {

model::TableFormat TableExport::formatForPath(const QString& path, model::TableFormat fallback) {
    const QString s = QFileInfo(path).suffix().toLower();
    if (s == QLatin1String("csv"))
        return model::TableFormat::Csv;
    if (s == QLatin1String("json"))
        return model::TableFormat::Json;
    if (s == QLatin1String("md") || s == QLatin1String("markdown"))
        return model::TableFormat::Markdown;
    if (s == QLatin1String("txt"))
        return model::TableFormat::Text;
    return fallback;
}

QString TableExport::suffix(model::TableFormat format) {
    const std::string_view suffix = model::tableFormatSuffix(format);
    return QString::fromLatin1(suffix.data(), static_cast<qsizetype>(suffix.size()));
}

bool TableExport::write(const model::Table& table, const QString& path, model::TableFormat format,
                        QString* error) {
    std::ostringstream out;
    model::writeTable(out, table, format);
    const std::string bytes = out.str();
    // The save dialog asked before replacing: whole or not at all, and a symbolic link at the
    // path is replaced, never written through (outputfile.h).
    try {
        format::OutputFile output(QFile::encodeName(path).toStdString(), true);
        QFile file(QFile::decodeName(output.tempPath().c_str()));
        if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate) ||
            file.write(bytes.data(), static_cast<qint64>(bytes.size())) !=
                static_cast<qint64>(bytes.size()) ||
            !file.flush()) {
            if (error)
                *error = QStringLiteral("Cannot write %1: %2").arg(path, file.errorString());
            return false;
        }
        file.close();
        output.commit();
    } catch (const std::exception& e) {
        if (error)
            *error = QString::fromStdString(e.what());
        return false;
    }
    return true;
}

QString TableExport::toTsv(const model::Table& table, const std::vector<int>& rows) {
    const auto clean = [](QString s) {
        s.replace(QLatin1Char('\t'), QLatin1Char(' '));
        s.replace(QLatin1Char('\r'), QLatin1Char(' '));
        s.replace(QLatin1Char('\n'), QLatin1Char(' '));
        return s;
    };
    QStringList lines;
    QStringList header;
    for (const model::Column& c : table.columns())
        header << clean(QString::fromStdString(c.name));
    lines << header.join(QLatin1Char('\t'));
    for (const int r : rows) {
        if (r < 0 || static_cast<size_t>(r) >= table.rowCount())
            continue;
        QStringList cells;
        for (size_t c = 0; c < table.columnCount(); ++c)
            cells << clean(
                TableModel::exportText(table.cell(static_cast<size_t>(r), c), table.columns()[c]));
        lines << cells.join(QLatin1Char('\t'));
    }
    return lines.join(QLatin1Char('\n')) + QLatin1Char('\n');
}

} // namespace warpline::views
