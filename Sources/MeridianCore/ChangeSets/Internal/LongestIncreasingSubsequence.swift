// MARK: - Longest increasing subsequence

/// Patience sorting: marks one longest strictly increasing subsequence of `values` in O(k log k).
///
/// The diff keeps the rows (and sections) on the returned subsequence in place and reports the others as moves, so
/// the number of moves is the smallest possible.
///
/// - Parameter values: The sequence, typically old indices listed in new order.
/// - Returns: A mask, `true` at the positions of `values` that belong to the chosen subsequence.
func longestIncreasingSubsequenceMask(_ values: [Int]) -> [Bool] {
    guard !values.isEmpty else { return [] }
    // tails[p]: the position of the smallest value ending an increasing subsequence of length p + 1.
    var tails: [Int] = []
    tails.reserveCapacity(values.count)
    // predecessor[i]: the position before i on the best subsequence ending at i, or -1.
    var predecessor = [Int](repeating: -1, count: values.count)
    for (i, value) in values.enumerated() {
        var low = 0
        var high = tails.count
        while low < high {
            let mid = (low + high) / 2
            if values[tails[mid]] < value { low = mid + 1 } else { high = mid }
        }
        if low > 0 { predecessor[i] = tails[low - 1] }
        if low == tails.count { tails.append(i) } else { tails[low] = i }
    }
    var mask = [Bool](repeating: false, count: values.count)
    var position = tails[tails.count - 1]
    while position >= 0 {
        mask[position] = true
        position = predecessor[position]
    }
    return mask
}
