#pragma once

// Test helper: reads a trace file back through plain SQL, independent of model/.

#include <QString>
#include <QVariant>
#include <QVariantList>
#include <QtTest>
#include <sqlite3.h>

class SqliteReader {
public:
    explicit SqliteReader(const QString& path) {
        if (sqlite3_open_v2(path.toUtf8().constData(), &m_db, SQLITE_OPEN_READONLY, nullptr) !=
            SQLITE_OK)
            qFatal("cannot open %s", qPrintable(path));
    }
    ~SqliteReader() { sqlite3_close(m_db); }
    SqliteReader(const SqliteReader&) = delete;
    SqliteReader& operator=(const SqliteReader&) = delete;

    // Every row of the query, each row a list of column values (NULL -> invalid QVariant).
    QList<QVariantList> rows(const QString& sql) const {
        QList<QVariantList> out;
        sqlite3_stmt* stmt = nullptr;
        if (sqlite3_prepare_v2(m_db, sql.toUtf8().constData(), -1, &stmt, nullptr) != SQLITE_OK)
            qFatal("bad SQL %s: %s", qPrintable(sql), sqlite3_errmsg(m_db));
        while (sqlite3_step(stmt) == SQLITE_ROW) {
            QVariantList row;
            for (int c = 0; c < sqlite3_column_count(stmt); ++c) {
                switch (sqlite3_column_type(stmt, c)) {
                case SQLITE_INTEGER:
                    row << QVariant::fromValue<qlonglong>(sqlite3_column_int64(stmt, c));
                    break;
                case SQLITE_FLOAT:
                    row << sqlite3_column_double(stmt, c);
                    break;
                case SQLITE_TEXT:
                    row << QString::fromUtf8(
                        reinterpret_cast<const char*>(sqlite3_column_text(stmt, c)));
                    break;
                default:
                    row << QVariant();
                }
            }
            out << row;
        }
        sqlite3_finalize(stmt);
        return out;
    }
    QVariant value(const QString& sql) const {
        const auto r = rows(sql);
        return r.isEmpty() || r.first().isEmpty() ? QVariant() : r.first().first();
    }

private:
    sqlite3* m_db = nullptr;
};
