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

/// `0..<count` cut into `pieces` (at least one) consecutive ranges of equal length but the last, in order: how the
/// callers of ``concurrently(_:_:)`` split their input. Trailing ranges are empty when `count` is short of `pieces`.
package func pieceRanges(_ count: Int, pieces: Int) -> [Range<Int>] {
    let pieceCount = max(1, pieces)
    let length = (count + pieceCount - 1) / pieceCount
    return (0..<pieceCount).map { min(count, $0 * length)..<min(count, ($0 + 1) * length) }
}
