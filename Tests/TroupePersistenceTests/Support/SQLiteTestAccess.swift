import SQLiteNIO

/// Direct access to a store's file, for tests that play a newer build, an older one or a
/// damaged file.
enum SQLiteTestAccess {
    /// Runs each statement, in order, on a connection of its own.
    static func execute(_ statements: String..., path: String) async throws {
        let connection = try await SQLiteConnection.open(storage: .file(path: path))
        for sql in statements { _ = try await connection.query(sql) }
        try await connection.close()
    }

    /// The first column of each row `sql` returns, as text.
    static func strings(_ sql: String, path: String) async throws -> [String] {
        let connection = try await SQLiteConnection.open(storage: .file(path: path))
        let rows = try await connection.query(sql)
        try await connection.close()
        return rows.map { $0.columns.first.map { "\($0.data.description)" } ?? "" }
    }
}
