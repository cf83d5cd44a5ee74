def test_human_size(candidate):
    assert candidate(3) == "3 B" and candidate(0) == "0 B" and candidate(999) == "999 B"
    assert candidate(1500) == "1.5 kB" and candidate(820_000) == "820 kB" and candidate(1_500_000) == "1.5 MB"
    assert candidate(1536, binary=True) == "1.5 KiB" and candidate(1024 ** 3, binary=True) == "1.0 GiB"
    assert candidate(-5_000_000) == "-5.0 MB" and candidate(-2_500_000_000) == "-2.5 GB"
    assert candidate(-512) == "-512 B" and candidate(-3 * 1024 ** 2, binary=True) == "-3.0 MiB"
    assert candidate(7 * 10 ** 18) == "7000 PB"
