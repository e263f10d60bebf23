import Testing

/// Expects `body` to throw an error of type `E` matching `matches`, and returns it.
@discardableResult
public func expectError<E: Error, T>(
    _ errorType: E.Type,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> T,
    matches: (E) -> Bool = { _ in true }
) -> E? {
    do {
        let value = try body()
        Issue.record("expected \(E.self), got the value \(value)", sourceLocation: sourceLocation)
        return nil
    } catch let error as E {
        #expect(matches(error), "unexpected \(E.self): \(error)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected \(E.self), got \(type(of: error)): \(error)", sourceLocation: sourceLocation)
        return nil
    }
}
