#if canImport(Glibc)
    import Glibc
#endif

/// The terminal in raw mode (keys arrive one by one, unechoed) for as long as the view runs;
/// the original settings come back on `restore`, also after Ctrl-C.
enum Terminal {
    nonisolated(unsafe) private static var original = termios()  // written once before raw mode, read to restore

    static var isInteractive: Bool { isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1 }

    static var width: Int {
        var size = winsize()
        return ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 0 ? Int(size.ws_col) : 120
    }

    static func enterRawMode() {
        tcgetattr(STDIN_FILENO, &original)
        var raw = original
        raw.c_lflag &= ~tcflag_t(ECHO | ICANON)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw)
        signal(SIGINT) { _ in
            Terminal.restore()
            exit(130)
        }
        write("\u{1B}[?25l")  // hide the cursor
    }

    static func restore() {
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &original)
        write("\u{1B}[?25h\n")
    }

    /// Clears the screen and draws `lines`.
    static func draw(_ lines: [String]) {
        write("\u{1B}[H\u{1B}[2J" + lines.joined(separator: "\r\n"))
    }

    /// A key pressed within `milliseconds`, or nil.
    static func key(within milliseconds: Int32) -> UInt8? {
        var descriptor = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, milliseconds) > 0 else { return nil }
        var byte: UInt8 = 0
        return read(STDIN_FILENO, &byte, 1) == 1 ? byte : nil
    }

    static func writeError(_ text: String) {
        var text = text
        text.withUTF8 { _ = Glibc.write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }

    static func write(_ text: String) {
        var text = text
        text.withUTF8 { _ = Glibc.write(STDOUT_FILENO, $0.baseAddress, $0.count) }
    }
}
