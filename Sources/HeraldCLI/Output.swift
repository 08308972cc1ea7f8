import Foundation

/// Unbuffered output lines, so a line reaches a pipe (a test, a supervisor) the moment it is printed.
enum Output {
    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func error(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
    }
}
