// MARK: - Work split over the cores

internal import Dispatch

/// `body` for each of `0..<count` at once, on as many threads as the machine has cores
/// (`DispatchQueue.concurrentPerform`; the calling thread takes part, and runs them all when no other is free): each
/// result, or what its call threw, in index order. The CLI's readers split their input with it; a controller's large
/// fill builds its tree and its id index with it.
package func concurrently<Success: Sendable, Failure: Error>(
    _ count: Int, _ body: @Sendable (Int) throws(Failure) -> Success
) -> [Result<Success, Failure>] {
    var results = [Result<Success, Failure>?](repeating: nil, count: count)
    results.withUnsafeMutableBufferPointer { results in
        // Each index writes its own slot; all are written when concurrentPerform returns.
        nonisolated(unsafe) let out = results
        DispatchQueue.concurrentPerform(iterations: count) { index in
            out[index] = Result { () throws(Failure) in try body(index) }
        }
    }
    return results.map { $0! }
}
