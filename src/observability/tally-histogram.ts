/**
 * A Prometheus histogram with one label whose observations are plain array increments,
 * exposed through prom-client's registry at scrape time. prom-client's own Histogram
 * resolves its labels on every observe(), which showed in the cache-hit profile; this one is
 * for the per-request path only.
 */
import type { Registry } from 'prom-client';

interface Series {
  readonly counts: number[];
  sum: number;
  count: number;
}

export class TallyHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly #series = new Map<string, Series>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelName: string,
    private readonly buckets: readonly number[],
    registry: Registry,
  ) {
    registry.registerMetric(this as never);
  }

  observe(labelValue: string, value: number): void {
    let series = this.#series.get(labelValue);
    if (series === undefined) {
      series = { counts: new Array<number>(this.buckets.length).fill(0), sum: 0, count: 0 };
      this.#series.set(labelValue, series);
    }
    // Buckets are few (a dozen): a linear scan beats anything cleverer here.
    for (let i = 0; i < this.buckets.length; i++) {
      if (value <= this.buckets[i]!) {
        series.counts[i]!++;
        break;
      }
    }
    series.sum += value;
    series.count++;
  }

  /** prom-client's metric interface: cumulative buckets, +Inf, _sum and _count per label value. */
  get() {
    const values: Array<{ metricName: string; labels: Record<string, string | number>; value: number }> = [];
    for (const [labelValue, series] of this.#series) {
      let cumulative = 0;
      this.buckets.forEach((le, i) => {
        cumulative += series.counts[i]!;
        values.push({
          metricName: `${this.name}_bucket`,
          labels: { [this.labelName]: labelValue, le },
          value: cumulative,
        });
      });
      values.push({
        metricName: `${this.name}_bucket`,
        labels: { [this.labelName]: labelValue, le: '+Inf' },
        value: series.count,
      });
      values.push({
        metricName: `${this.name}_sum`,
        labels: { [this.labelName]: labelValue },
        value: series.sum,
      });
      values.push({
        metricName: `${this.name}_count`,
        labels: { [this.labelName]: labelValue },
        value: series.count,
      });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {
    this.#series.clear();
  }
}
