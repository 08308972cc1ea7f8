import Foundation
import HeraldFuzzing

// libFuzzer provides `main` and calls `LLVMFuzzerTestOneInput` for each input. A finding traps, which libFuzzer
// reports as a crash and saves as `crash-<sha1>`: copy it into Fuzz/Corpus/<target>/ once fixed.

/// The target HERALD_FUZZ_TARGET names, read once (a global `let` is initialised lazily and exactly once).
private let selected: FuzzTarget = {
    let name = ProcessInfo.processInfo.environment["HERALD_FUZZ_TARGET"] ?? ""
    guard let target = FuzzTarget(rawValue: name) else {
        let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
        FileHandle.standardError.write(Data("Set HERALD_FUZZ_TARGET to one of: \(names)\n".utf8))
        exit(2)
    }
    return target
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    if let finding = selected.check(input) {
        fatalError("\(finding)")
    }
    return 0
}
