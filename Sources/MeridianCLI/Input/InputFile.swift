// MARK: - Reading input files

internal import Foundation
internal import MeridianProcessIO

/// Reads a command's input: a file path, or `-` for standard input.
enum InputFile {
    /// The whole text of `path` (`-`: standard input), as UTF-8.
    ///
    /// - Throws: ``CLIError`` with status `badInput` when the file cannot be read or is not UTF-8.
    static func read(_ path: String) throws(CLIError) -> String {
        let data: Data
        if path == "-" {
            data = FileHandle.standardInput.remainingData()
        } else {
            do {
                data = try Data(contentsOf: URL(fileURLWithPath: path))
            } catch {
                throw CLIError.badInput("cannot read '\(path)': \(Self.reason(error))", cause: error)
            }
        }
        guard var text = String(data: data, encoding: .utf8) else {
            throw CLIError.badInput("'\(path)' is not UTF-8 text")
        }
        if text.hasPrefix("\u{FEFF}") { text.removeFirst() }
        return text
    }

    private static func reason(_ error: any Error) -> String {
        let nsError = error as NSError
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError,
            underlying.domain == NSPOSIXErrorDomain, let code = POSIXErrorCode(rawValue: Int32(underlying.code))
        {
            return String(cString: strerror(code.rawValue)).lowercased()
        }
        if nsError.domain == NSCocoaErrorDomain, nsError.code == NSFileReadNoSuchFileError {
            return "no such file"
        }
        return nsError.localizedDescription
    }
}
