import ArgumentParser
import Foundation

/// Unbuffered output lines, so a line reaches a pipe (a test, a supervisor) the moment it is printed.
enum Output {
    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func error(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }

    /// The end of a load run (`--repeat`): a JSON line (`ok`, `failed`, `seconds`, `rate`) or a sentence; nothing for a
    /// short run whose every notification was reported. Exits with status 1 when any failed.
    static func loadSummary(ok: Int, failed: Int, since started: ContinuousClock.Instant, json: Bool, quiet: Bool) throws {
        let elapsed = started.duration(to: .now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        if json {
            line(#"{"ok": \#(ok), "failed": \#(failed), "seconds": \#(seconds), "rate": \#(Double(ok) / max(seconds, 1e-9))}"#)
        } else if quiet {
            line("\(ok) accepted, \(failed) not, in \(String(format: "%.2f", seconds)) s (\(Int(Double(ok) / max(seconds, 1e-9)))/s).")
        }
        if failed > 0 { throw ExitCode(1) }
    }
}
