import SQLiteNIO

/// Direct access to a store's file, for tests that play a newer build or a damaged file.
enum SQLiteTestAccess {
    static func execute(_ sql: String, path: String) async throws {
        let connection = try await SQLiteConnection.open(storage: .file(path: path))
        _ = try await connection.query(sql)
        try await connection.close()
    }
}
