/// Stops the process with `message` unless `condition` holds: for a misuse of the API, where
/// the message says what to do. Release builds keep the message, where they drop a
/// `precondition`'s and print only "precondition failure". For entry points, not the
/// per-message path: the message is made only when the check fails, but the check is a call's
/// worth of code.
@inline(__always)
func requireValidUse(
    _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
    file: StaticString = #fileID, line: UInt = #line
) {
    if _slowPath(!condition()) { fatalError(message(), file: file, line: line) }
}
