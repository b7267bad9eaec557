// MARK: - Starting children without Foundation's over-read

internal import CMeridianProcessIO

#if canImport(Glibc)
    internal import Glibc
#endif

/// Whether this process's `readdir` hands out whole `struct dirent` records, so that Foundation's `Process.run()`
/// cannot read past the end of glibc's buffer when it lists `/proc/self/fd` (CMeridianProcessIO.c says why): true in
/// every executable that links MeridianProcessIO, on Linux.
///
/// - Parameter path: A directory to read through `readdir` (every entry is checked).
/// - Returns: `false` when the directory cannot be opened, has no entry, or any entry came straight from glibc.
public func readdirHandsOutWholeRecords(in path: String = "/proc/self/fd") -> Bool {
    #if os(Linux)
        guard let directory = opendir(path) else { return false }
        defer { closedir(directory) }
        var entries = 0
        while let entry = readdir(directory) {
            guard meridian_readdir_is_whole_record(entry) == 1 else { return false }
            entries += 1
        }
        return entries > 0
    #else
        return false
    #endif
}
