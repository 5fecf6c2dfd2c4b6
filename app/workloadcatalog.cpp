#include "workloadcatalog.h"

#include <QRegularExpression>

namespace warpline::app {

std::vector<WorkloadInfo> WorkloadCatalog::parse(const QString& listOutput) {
    std::vector<WorkloadInfo> out;
    static const QRegularExpression defaultRe(QStringLiteral("\\s*\\(default ([^()]*)\\)\\s*$"));
    for (const QString& raw : listOutput.split(QLatin1Char('\n'))) {
        QString line = raw;
        if (line.endsWith(QLatin1Char('\r')))
            line.chop(1);
        if (line.trimmed().isEmpty())
            continue;
        if (!line.at(0).isSpace()) {
            const QString trimmed = line.trimmed();
            const qsizetype space = trimmed.indexOf(QRegularExpression(QStringLiteral("\\s")));
            WorkloadInfo w;
            w.name = space < 0 ? trimmed : trimmed.left(space);
            w.description = space < 0 ? QString() : trimmed.mid(space).trimmed();
            out.push_back(std::move(w));
            continue;
        }
        const QString trimmed = line.trimmed();
        if (out.empty() || !trimmed.startsWith(QLatin1String("--")))
            continue;
        const qsizetype space = trimmed.indexOf(QRegularExpression(QStringLiteral("\\s")));
        WorkloadOption o;
        o.name = (space < 0 ? trimmed : trimmed.left(space)).mid(2);
        QString help = space < 0 ? QString() : trimmed.mid(space).trimmed();
        const auto m = defaultRe.match(help);
        if (m.hasMatch()) {
            o.defaultValue = m.captured(1).trimmed();
            help.truncate(m.capturedStart());
        }
        o.help = help.trimmed();
        out.back().options.push_back(std::move(o));
    }
    return out;
}

QStringList
WorkloadCatalog::recordArguments(const QString& workload,
                                 const std::vector<std::pair<QString, QString>>& options,
                                 const QString& output, bool overwrite) {
    QStringList args{QStringLiteral("--workload"), workload};
    for (const auto& [name, value] : options) {
        if (!value.trimmed().isEmpty())
            args << QStringLiteral("--%1=%2").arg(name, value.trimmed());
    }
    args << QStringLiteral("-o") << output;
    if (overwrite)
        args << QStringLiteral("--force");
    return args;
}

QStringList WorkloadCatalog::splitArguments(const QString& text) {
    QStringList out;
    QString word;
    bool inWord = false;
    QChar quote; // '\'' or '"' while inside quotes
    for (qsizetype i = 0; i < text.size(); ++i) {
        const QChar c = text.at(i);
        if (quote == QLatin1Char('\'')) {
            if (c == quote)
                quote = QChar();
            else
                word += c;
        } else if (quote == QLatin1Char('"')) {
            if (c == quote) {
                quote = QChar();
            } else if (c == QLatin1Char('\\') && i + 1 < text.size() &&
                       QStringLiteral("\"\\$`").contains(text.at(i + 1))) {
                word += text.at(++i);
            } else {
                word += c;
            }
        } else if (c.isSpace()) {
            if (inWord)
                out << word;
            word.clear();
            inWord = false;
        } else {
            inWord = true;
            if (c == QLatin1Char('\'') || c == QLatin1Char('"'))
                quote = c;
            else if (c == QLatin1Char('\\') && i + 1 < text.size())
                word += text.at(++i);
            else
                word += c;
        }
    }
    if (inWord)
        out << word;
    return out;
}

QStringList WorkloadCatalog::programArguments(const QString& program, const QString& arguments,
                                              const QString& output, bool overwrite) {
    QStringList args{QStringLiteral("-o"), output};
    if (overwrite)
        args << QStringLiteral("--force");
    args << QStringLiteral("--") << program << splitArguments(arguments);
    return args;
}

} // namespace warpline::app
