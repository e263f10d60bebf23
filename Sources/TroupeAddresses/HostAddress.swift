#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// What a host string given to a listener names, for the modules that refuse to serve off this
/// machine without protection (the observer, the cluster): one rule, so that they agree.
package enum HostAddress {
    /// Whether `host` names this machine's loopback interface: `localhost`, an IPv4 address in
    /// 127.0.0.0/8, `::1` or `::ffff:127.x.x.x` (an IPv4-mapped loopback address). Only
    /// addresses count, never names that merely start with `127.` (`127.example.com` is
    /// somebody else's machine).
    package static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, host, &v6) == 1 else { return false }
        return withUnsafeBytes(of: &v6) { bytes in
            let loopback = bytes.prefix(15).allSatisfy { $0 == 0 } && bytes[15] == 1
            let mappedV4 = bytes.prefix(10).allSatisfy { $0 == 0 } && bytes[10] == 0xff && bytes[11] == 0xff
            return loopback || (mappedV4 && bytes[12] == 127)
        }
    }
}
