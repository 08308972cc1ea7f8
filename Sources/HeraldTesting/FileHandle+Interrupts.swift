public import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension FileHandle {
    /// What `availableData` returns — the bytes ready now, waiting for some if there are none, empty at end of file —
    /// without its `try!`: swift-corelibs-foundation traps when `read` is interrupted by a signal (EINTR), which
    /// happens while tests start and reap child processes in parallel. An interrupted read is retried; any other
    /// read error reads as end of file.
    public func availableDataRetryingInterrupts() -> Data {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let descriptor = fileDescriptor
            let count = buffer.withUnsafeMutableBytes { Self.systemRead(descriptor, $0.baseAddress, $0.count) }
            if count >= 0 { return Data(buffer[0..<count]) }
            if errno != EINTR { return Data() }
        }
    }

    private static func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
        #if canImport(Glibc)
        Glibc.read(descriptor, buffer, count)
        #else
        Darwin.read(descriptor, buffer, count)
        #endif
    }

    /// `readDataToEndOfFile()` with interrupted reads retried (see ``availableDataRetryingInterrupts()``).
    public func readToEndRetryingInterrupts() -> Data {
        var data = Data()
        while true {
            let chunk = availableDataRetryingInterrupts()
            if chunk.isEmpty { return data }
            data.append(chunk)
        }
    }
}
