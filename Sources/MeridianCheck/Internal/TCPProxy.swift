// MARK: - TCPProxy: clients reach the server through it, and it cuts connections on demand

internal import Foundation
internal import Synchronization

#if canImport(Glibc)
    internal import Glibc
#endif

/// A loopback TCP proxy: it accepts on `127.0.0.1:port` and pipes each connection to the server's current port
/// (which changes when the server is restarted), one thread per direction. ``cutAll()`` shuts every connection down,
/// as a network failure would. Socket buffers are kept small so that a stopped client's backlog builds up on the
/// server (its queue bound, and the resnapshot path) rather than in the kernel.
final class TCPProxy: Sendable {
    private struct State {
        var upstreamPort: Int
        var connections: [Int: (client: Int32, server: Int32)] = [:]
        var nextID = 0
        var cuts = 0
        var stopped = false
    }

    let port: Int
    private let listener: Int32
    private let state: Mutex<State>

    init(upstreamPort: Int) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw CheckError("proxy: socket() failed: errno \(errno)") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 128) == 0 else {
            close(fd)
            throw CheckError("proxy: cannot listen on 127.0.0.1: errno \(errno)")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.listener = fd
        self.port = Int(UInt16(bigEndian: actual.sin_port))
        self.state = Mutex(State(upstreamPort: upstreamPort))
        Thread.detachNewThread { [self] in self.acceptLoop() }
    }

    /// Where new connections go (the restarted server's port).
    func setUpstream(port: Int) {
        self.state.withLock { $0.upstreamPort = port }
    }

    /// The number of connections cut so far.
    var cuts: Int { self.state.withLock { $0.cuts } }

    /// Cuts every open connection; returns how many.
    @discardableResult
    func cutAll() -> Int {
        let victims = self.state.withLock { state in
            let victims = Array(state.connections.values)
            state.cuts += victims.count
            return victims
        }
        for (client, server) in victims {
            shutdown(client, Int32(SHUT_RDWR))
            shutdown(server, Int32(SHUT_RDWR))
        }
        return victims.count
    }

    /// Stops accepting and cuts every connection.
    func stop() {
        self.state.withLock { $0.stopped = true }
        shutdown(self.listener, Int32(SHUT_RDWR))
        self.cutAll()
    }

    // MARK: - Threads

    private func acceptLoop() {
        while true {
            let client = accept(self.listener, nil, nil)
            if client < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                break
            }
            let (port, stopped) = self.state.withLock { ($0.upstreamPort, $0.stopped) }
            if stopped {
                close(client)
                break
            }
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.loopback(port: port)
            Self.shrinkBuffers(client)
            Self.shrinkBuffers(server)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard connected == 0 else {
                close(server)
                close(client)
                continue
            }
            let id = self.state.withLock { state in
                defer { state.nextID += 1 }
                state.connections[state.nextID] = (client, server)
                return state.nextID
            }
            let remaining = Countdown(2)
            let finish: @Sendable () -> Void = { [self] in
                shutdown(client, Int32(SHUT_RDWR))
                shutdown(server, Int32(SHUT_RDWR))
                if remaining.decrement() == 0 {
                    self.state.withLock { _ = $0.connections.removeValue(forKey: id) }
                    close(client)
                    close(server)
                }
            }
            Thread.detachNewThread {
                Self.pump(from: client, to: server)
                finish()
            }
            Thread.detachNewThread {
                Self.pump(from: server, to: client)
                finish()
            }
        }
    }

    private static func pump(from source: Int32, to destination: Int32) {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            if count <= 0 { return }
            var offset = 0
            while offset < count {
                let written = buffer.withUnsafeBytes {
                    send(destination, $0.baseAddress! + offset, count - offset, Int32(MSG_NOSIGNAL))
                }
                if written < 0, errno == EINTR { continue }
                if written <= 0 { return }
                offset += written
            }
        }
    }

    private static func shrinkBuffers(_ fd: Int32) {
        var size: Int32 = 32 * 1024
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}

/// A counter shared by the two pump threads of one connection: the last one out closes the sockets.
final class Countdown: Sendable {
    private let value: Atomic<Int>

    init(_ value: Int) {
        self.value = Atomic(value)
    }

    /// Decrements and returns the new value.
    func decrement() -> Int {
        self.value.subtract(1, ordering: .sequentiallyConsistent).newValue
    }
}
