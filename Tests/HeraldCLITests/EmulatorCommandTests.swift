import ArgumentParser
import Foundation
@testable import HeraldCLI
import Testing

@Suite("herald emulator: options")
struct EmulatorCommandTests {
    @Test("the fault flags take the spelling docs/emulator.md uses, and the old one")
    func faultFlags() throws {
        let documented = try EmulatorCommand.parse(["--fault-429", "0.25", "--fault-500", "0.1", "--fault-503", "0.05", "--fault-shutdown", "0.01"])
        #expect(documented.fault429 == 0.25 && documented.fault500 == 0.1 && documented.fault503 == 0.05 && documented.faultShutdown == 0.01)
        let old = try EmulatorCommand.parse(["--fault429", "0.5"])
        #expect(old.fault429 == 0.5)
        #expect(try EmulatorCommand.parse(["--refuse-rate", "1"]).refuseRate == 1)
    }

    @Test("the generated CA goes to a state folder, not the working folder, unless --ca-file says where")
    func caFileLocation() throws {
        #expect(EmulatorCommand.defaultCAFile(environment: ["XDG_STATE_HOME": "/state", "HOME": "/home/me"]) == "/state/herald/herald-emulator-ca.pem")
        #expect(EmulatorCommand.defaultCAFile(environment: ["HOME": "/home/me"]) == "/home/me/.local/state/herald/herald-emulator-ca.pem")
        #expect(EmulatorCommand.defaultCAFile(environment: ["XDG_STATE_HOME": "relative"]).hasPrefix("/"), "a relative XDG_STATE_HOME is ignored")
        #expect(EmulatorCommand.defaultCAFile(environment: [:]).hasPrefix(FileManager.default.temporaryDirectory.path))
        #expect(try EmulatorCommand.parse([]).caFile == nil)
        #expect(try EmulatorCommand.parse(["--ca-file", "here.pem"]).caFile == "here.pem")
    }
}
