"""What tests share (the product's and the benchmarks'): servers on free ports, stand-in engines
and runtimes, raw clients, generated inputs. Test modules import from here, never from each
other."""
