import Foundation
import HeraldCore
import HeraldFuzzing
import Testing

/// The fuzzers' seed corpus and every saved finding, replayed on each `swift test`: a crash input that libFuzzer
/// found becomes a regression test by being copied into `Fuzz/Corpus/<target>/`.
@Suite("Fuzz corpus replay")
struct CorpusReplayTests {
    static let corpus = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz/Corpus")

    static func inputs(of target: FuzzTarget) throws -> [(name: String, bytes: [UInt8])] {
        let folder = corpus.appendingPathComponent(target.rawValue)
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        return try names.map { name in
            (name, Array(try Data(contentsOf: folder.appendingPathComponent(name))))
        }
    }

    @Test("every committed input keeps its target's properties", arguments: FuzzTarget.allCases)
    func replay(_ target: FuzzTarget) throws {
        let inputs = try Self.inputs(of: target)
        #expect(inputs.count >= 4, "Fuzz/Corpus/\(target.rawValue) needs seeds")
        for input in inputs {
            #expect(target.check(input.bytes) == nil, "\(input.name)")
        }
    }

    /// A few thousand mutations of the seeds with a fixed seed: a fuzzer's first seconds, reproducible, in every run.
    @Test("seeded mutations of the corpus keep the properties", arguments: FuzzTarget.allCases)
    func mutations(_ target: FuzzTarget) throws {
        var generator = SplitMix64(seed: 0x4845_5241_4C44 ^ UInt64(target.rawValue.utf8.count))
        let seeds = try Self.inputs(of: target).map(\.bytes)
        for round in 0..<2_000 {
            var input = seeds[Int(generator.next() % UInt64(seeds.count))]
            for _ in 0...(generator.next() % 4) { mutate(&input, with: &generator) }
            let finding = target.check(input)
            #expect(finding == nil, "round \(round): \(input)")
            if finding != nil { return }
        }
    }

    /// The properties are checked only on what a parser accepts: the seeds must mostly be accepted, or the replay
    /// would prove nothing.
    @Test("most seeds get past the parsers, so the properties are exercised")
    func seedsAreAccepted() throws {
        let json = try Self.inputs(of: .json).filter { (try? JSONValue(parsing: $0.bytes)) != nil }
        #expect(json.count >= 8)
        let payloads = try Self.inputs(of: .payload).filter { (try? Payload(jsonBytes: $0.bytes.dropFirst(2))) != nil }
        #expect(payloads.count >= 8)
        let tokens = try Self.inputs(of: .deviceToken).filter {
            (try? DeviceToken(hex: String(decoding: $0.bytes, as: UTF8.self))) != nil
        }
        #expect(tokens.count >= 4)
    }

    private func mutate(_ input: inout [UInt8], with generator: inout SplitMix64) {
        let position = input.isEmpty ? 0 : Int(generator.next() % UInt64(input.count))
        switch generator.next() % 5 {
        case 0 where !input.isEmpty: input[position] ^= UInt8(truncatingIfNeeded: 1 << (generator.next() % 8))
        case 1 where !input.isEmpty: input.remove(at: position)
        case 2: input.insert(UInt8(truncatingIfNeeded: generator.next()), at: position)
        case 3 where !input.isEmpty:
            let end = min(input.count, position + Int(generator.next() % 16))
            input.insert(contentsOf: input[position..<end], at: position)
        default:
            let interesting: [UInt8] = [0, 0x7f, 0x80, 0xff, 0x22, 0x5c, 0x7b, 0x5d]
            if !input.isEmpty { input[position] = interesting[Int(generator.next() % 8)] }
        }
    }
}

/// A small deterministic generator, so a failing round can be replayed.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E9B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
