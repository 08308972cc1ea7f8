import Foundation
import HeraldCore
import HeraldTesting
import Testing

@testable import HeraldEmulator

/// The close fault: a connection closed without GOAWAY after N streams.
extension EmulatorBehaviourTests {
    @Test("close after N streams: the Nth is delivered but never answered, and the connection closes without GOAWAY")
    func closeAfterStreams() async throws {
        try await fixture.run(fixture.configuration(faults: FaultConfiguration(closeAfterStreams: 3))) { emulator in
            let client = try await fixture.connect(emulator)
            let (headers, body) = fixture.alert()
            let path = "/3/device/" + fixture.developmentDevice.hex
            for _ in 0..<2 {
                #expect(try await client.send(path: path, headers: headers, body: body).status == 200)
            }
            await #expect(throws: (any Error).self, "the third stream gets no answer") {
                try await client.send(path: path, headers: headers, body: body)
            }
            await client.waitUntilClosed()
            #expect(client.events.goAways.isEmpty, "closed without a GOAWAY")
            #expect(emulator.counters.goAways == 0)
            #expect(emulator.counters.faults["closeAfterStreams"] == 1)
            #expect(emulator.counters.accepted == 3, "the unanswered stream was processed")
            #expect(try emulator.inbox(for: fixture.developmentDevice).count == 3)

            // Each connection counts its own streams: a new one serves two more before it closes in turn.
            let next = try await fixture.connect(emulator)
            #expect(try await next.send(path: path, headers: headers, body: body).status == 200)
            #expect(next.isActive)
            await next.close()
        }
    }

    @Test("closeAfterStreams must be at least 1")
    func closeAfterStreamsValidation() {
        #expect(throws: EmulatorError.self) { try FaultConfiguration(closeAfterStreams: 0).validated() }
        #expect((try? FaultConfiguration(closeAfterStreams: 1).validated()) != nil)
    }

    @Test("PUT /faults sets closeAfterStreams and null turns it off")
    func closeAfterStreamsField() throws {
        let set = try AdminAPI.faults(FaultConfiguration(), changedBy: Array(#"{"closeAfterStreams":1000}"#.utf8))
        #expect(set.closeAfterStreams == 1000 && set.goAwayAfterStreams == nil)
        let cleared = try AdminAPI.faults(set, changedBy: Array(#"{"closeAfterStreams":null}"#.utf8))
        #expect(cleared.closeAfterStreams == nil)
    }
}
