import Foundation
import HeraldCore
import HeraldEmulator
import HeraldTesting
import Testing

@Suite("Emulator: the shared outcome table over loopback TLS", .timeLimit(.minutes(2)))
struct OutcomeTableTests {
    let fixture = EmulatorFixture()

    @Test("every case gets APNs' status and reason", arguments: APNSOutcomeTable.cases)
    func outcome(_ testCase: APNSOutcomeTable.Case) async throws {
        try await fixture.run { emulator in
            let client = try await fixture.connect(emulator)
            try await withCleanup({ await client.close() }) {
                let response = try await fixture.send(testCase, on: client)
                #expect(response.status == testCase.status)
                #expect(response.reason == testCase.reason?.rawValue)
                #expect(response.headers["apns-id"] != nil, "every response carries an apns-id")
                #expect(response.headers["apns-unique-id"] != nil, "the development side sends apns-unique-id")
                if let supplied = testCase.headers["apns-id"] ?? nil, testCase.status == 200 {
                    #expect(response.headers["apns-id"] == supplied, "the caller's apns-id is echoed byte for byte")
                }
                if testCase.reason == .unregistered {
                    #expect(response.json?["timestamp"] as? Int == APNSOutcomeTable.unregisteredAtMilliseconds)
                } else {
                    #expect(response.json?["timestamp"] == nil)
                }
                if testCase.status != 200 {
                    #expect(response.headers["content-type"] == "application/json")
                    #expect(emulator.counters.rejected[testCase.reason!.rawValue] == 1)
                }
            }
        }
    }

    @Test("the production side sends no apns-unique-id, and accepts production tokens only")
    func production() async throws {
        try await fixture.run { emulator in
            let client = try await fixture.connect(emulator, .production)
            let (headers, body) = fixture.alert()
            let accepted = try await client.send(path: "/3/device/" + fixture.productionDevice.hex, headers: headers, body: body)
            #expect(accepted.status == 200)
            #expect(accepted.headers["apns-unique-id"] == nil)
            let mismatched = try await client.send(path: "/3/device/" + fixture.developmentDevice.hex, headers: headers, body: body)
            #expect(mismatched.status == 400 && mismatched.reason == "BadDeviceToken")
            await client.close()
        }
    }
}
