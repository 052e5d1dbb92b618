from dgbench import plots

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_plots_are_png(results, tmp_path):
    made = plots.make_all(results, str(tmp_path))
    assert "fio.png" in made and "metadata.png" in made and "ratios.png" in made
    for name in made:
        data = (tmp_path / name).read_bytes()
        assert data[:8] == PNG_MAGIC, name
        assert len(data) > 5000, name


def test_no_data_no_plot(results, tmp_path):
    results["summary"], results["ratios"] = {}, {}
    assert plots.make_all(results, str(tmp_path)) == []
