ROWS = [
    {"day": "2024-03-01", "product": "Tea", "region": "North", "qty": "3", "cents": "1200"},
    {"day": "2024-03-01", "product": "Coffee beans", "region": "South", "qty": "2", "cents": "2590"},
    {"day": "2024-03-02", "product": "Tea", "region": "South", "qty": "1", "cents": "400"},
    {"day": "2024-03-02", "product": "Mug", "region": "North", "qty": "9", "cents": "99999", "status": "void"},
    {"day": "2024-03-03", "product": "Tea", "region": "North", "qty": "2", "cents": "-400"},
]


def test_money(candidate):
    assert candidate(1234567) == "12,345.67" and candidate(-5) == "-0.05" and candidate(0) == "0.00"


def test_load(candidate):
    sales = candidate(ROWS)
    assert len(sales) == 4 and sales[1].product == "Coffee beans" and sales[3].cents == -400


def test_totals_by(candidate):
    assert candidate(load(ROWS), "product") == {"Tea": (6, 1200), "Coffee beans": (2, 2590)}


def test_table(candidate):
    text = candidate(["Item", "Qty"], [["Tea", "3"], ["Sugar", "12"]], numeric=(1,))
    assert text.splitlines() == ["Item   Qty", "-----  ---", "Tea      3", "Sugar   12"]


def test_best_day(candidate):
    assert candidate(load(ROWS)) == date(2024, 3, 1) and candidate([]) is None


def test_month_report(candidate):
    lines = candidate(load(ROWS), "March 2024").splitlines()
    assert lines[:7] == ["March 2024", "==========", "", "Product       Qty  Revenue", "------------  ---  -------",
                         "Coffee beans    2    25.90", "Tea             6    12.00"]
    assert "North      8.00  21.1%" in lines and lines[-2:] == ["Total: 37.90", "Best day: Fri 01 Mar"]
