// libFuzzer fuzzing of TroupeCluster's decoders of untrusted bytes: FrameDecoder,
// WireEnvelope.decode, BinaryClusterCoder's decode and the handshake state machine (see
// FuzzTarget for how an input picks one, and each target for the properties it checks).
//
// Built with `-Xswiftc -sanitize=fuzzer,address -Xswiftc -DTROUPE_LIBFUZZER` (scripts/fuzz.sh),
// this is a libFuzzer binary: the arguments are libFuzzer's (corpus directories, -max_total_time,
// ...). Built normally (`swift build --build-tests`), it replays the corpus through the same
// function and needs no fuzzer runtime:
//   troupe-cluster-fuzz [FILE_OR_DIR...]   replay (default: Tests/TroupeClusterFuzz/Corpus)
//   troupe-cluster-fuzz --write-seeds DIR  write the seed inputs (either build)

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif
#if canImport(Glibc)
    import Glibc
#endif

#if TROUPE_LIBFUZZER
    /// libFuzzer's entry point: one input.
    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
        fuzzOne(UnsafeBufferPointer(start: data, count: size))
        return 0
    }

    /// libFuzzer's driver (libclang_rt.fuzzer), run from this program's own `main`: SwiftPM
    /// links an executable's `main` to its `@main` (`--defsym main=troupe_cluster_fuzz_main`),
    /// so libFuzzer's own `main` is never linked in, and the `@main` below hands over to this.
    /// (Declared here with C's argument types: the module has no C header to import it from.)
    @_silgen_name("LLVMFuzzerRunDriver")
    func LLVMFuzzerRunDriver(
        _ argc: UnsafeMutablePointer<CInt>,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
        _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
    ) -> CInt
#else
    /// One input, as libFuzzer would run it.
    public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
        fuzzOne(UnsafeBufferPointer(start: data, count: size))
        return 0
    }
#endif

/// A line on standard error.
func complain(_ message: String) {
    var line = message + "\n"
    line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}

@main
struct TroupeClusterFuzz {
    static func main() throws {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "--write-seeds" {
            guard arguments.count == 2 else {
                complain("usage: troupe-cluster-fuzz --write-seeds DIR")
                exit(2)
            }
            try Seeds.write(to: arguments[1])
            return
        }
        #if TROUPE_LIBFUZZER
            var argc = CommandLine.argc
            var argv = CommandLine.unsafeArgv
            exit(LLVMFuzzerRunDriver(&argc, &argv, fuzz))
        #else
            replay(arguments.isEmpty ? [defaultCorpus] : arguments)
        #endif
    }

    /// The committed corpus: from the package's directory, else next to this file.
    static var defaultCorpus: String {
        let relative = "Tests/TroupeClusterFuzz/Corpus"
        if FileManager.default.fileExists(atPath: relative) { return relative }
        let file = "\(#filePath)"
        return String(file[..<(file.lastIndex(of: "/") ?? file.endIndex)]) + "/Corpus"
    }

    /// Runs every file of the directories (and every file) given, in name order.
    static func replay(_ paths: [String]) {
        var files: [String] = []
        for path in paths {
            if let names = try? FileManager.default.contentsOfDirectory(atPath: path) {
                files += names.filter { !$0.hasPrefix(".") }.sorted().map { path + "/" + $0 }
            } else if FileManager.default.fileExists(atPath: path) {
                files.append(path)
            } else {
                complain("troupe-cluster-fuzz: no such file or directory: \(path)")
                exit(1)
            }
        }
        guard !files.isEmpty else {
            complain("troupe-cluster-fuzz: no inputs in \(paths.joined(separator: " "))")
            exit(1)
        }
        var replayed = 0
        for file in files {
            guard let data = FileManager.default.contents(atPath: file) else { continue }  // a subdirectory
            let bytes = [UInt8](data)
            bytes.withUnsafeBufferPointer { buffer in
                // A valid pointer even for an empty input.
                withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(buffer.count, 1)) { copy in
                    _ = copy.initialize(fromContentsOf: buffer)
                    _ = fuzz(UnsafePointer(copy.baseAddress!), buffer.count)
                }
            }
            replayed += 1
        }
        print(Reached.summary)
        print("\(replayed) inputs replayed, 0 crashes")
    }
}
