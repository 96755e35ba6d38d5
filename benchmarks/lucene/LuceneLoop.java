// Lucene's own search loop for benchmarks/bench_lucene.py: one thread, BM25, top-k document
// numbers only, timed without the JVM start, the index opening or the run's writing.
//
// Compiled against the Anserini fatjar shipped in the pyserini wheel (benchmarks/install_lucene.sh):
//
//   javac -cp anserini-0.25.0-fatjar.jar -d build LuceneLoop.java
//
// Two commands:
//
//   java -cp JAR:build LuceneLoop index <IndexCollection arguments>
//       Anserini's IndexCollection as it ships; prints "LUCENELOOP {...}" with the process's peak
//       RSS (VmHWM from /proc/self/status, read in a shutdown hook) and the wall seconds.
//
//   java -cp JAR:build LuceneLoop search -index DIR -analyzer de|fr|pl|...|whitespace
//        -queries NAME=FILE [-queries NAME=FILE ...] -k 10,100 -k1 1.2 -b 0.75 -passes 3
//        [-run PREFIX]
//       Each query file holds "qid<TAB>text" lines. For every query set and k: untimed passes
//       (JIT warm-up, repeated until they took -warmup seconds, 2 by default; the hits become
//       PREFIX.NAME.kK.trec), then -passes timed passes over the
//       whole set. A pass is, per query: analysis (the analyzer Anserini indexes that language
//       with, or whitespace for pre-tokenised text), the distinct terms as a BooleanQuery of
//       SHOULD TermQuery clauses (lexir scores distinct query terms too), IndexSearcher.search(q, k)
//       on one thread; only the TopDocs' document numbers are kept (no stored field is read).
//       Prints one "LUCENELOOP {...}" line per set and k with every pass's seconds.
import io.anserini.analysis.AnalyzerMap;
import io.anserini.index.IndexCollection;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.core.WhitespaceAnalyzer;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.StoredFields;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.BooleanClause;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.TopDocs;
import org.apache.lucene.search.similarities.BM25Similarity;
import org.apache.lucene.store.FSDirectory;

public final class LuceneLoop {
  static final String FIELD = "contents"; // Anserini's Constants.CONTENTS
  static final String ID = "id"; // Anserini's Constants.ID

  static long vmHwmKib() {
    try {
      for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
        if (line.startsWith("VmHWM:")) {
          return Long.parseLong(line.replaceAll("[^0-9]", ""));
        }
      }
    } catch (IOException | NumberFormatException e) {
      return -1;
    }
    return -1;
  }

  static String quote(String s) {
    return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }

  static Analyzer analyzer(String name) {
    if (name.equals("whitespace")) {
      return new WhitespaceAnalyzer();
    }
    Analyzer a = AnalyzerMap.getLanguageSpecificAnalyzer(name);
    if (a == null) {
      throw new IllegalArgumentException("no Anserini analyzer for language " + name);
    }
    return a;
  }

  static List<String> terms(Analyzer analyzer, String text) throws IOException {
    LinkedHashSet<String> seen = new LinkedHashSet<>();
    try (TokenStream ts = analyzer.tokenStream(FIELD, text)) {
      CharTermAttribute term = ts.addAttribute(CharTermAttribute.class);
      ts.reset();
      while (ts.incrementToken()) {
        seen.add(term.toString());
      }
      ts.end();
    }
    return new ArrayList<>(seen);
  }

  static Query query(Analyzer analyzer, String text) throws IOException {
    BooleanQuery.Builder builder = new BooleanQuery.Builder();
    for (String t : terms(analyzer, text)) {
      builder.add(new TermQuery(new Term(FIELD, t)), BooleanClause.Occur.SHOULD);
    }
    return builder.build();
  }

  static void index(String[] args) throws Exception {
    final long start = System.nanoTime();
    Runtime.getRuntime().addShutdownHook(new Thread(() -> System.out.println(String.format(Locale.ROOT,
        "LUCENELOOP {\"command\": \"index\", \"wall_s\": %.3f, \"vm_hwm_kib\": %d}",
        (System.nanoTime() - start) / 1e9, vmHwmKib()))));
    IndexCollection.main(args);
  }

  static void search(String[] args) throws Exception {
    String index = null, analyzerName = null, runPrefix = null;
    List<String[]> sets = new ArrayList<>();
    int[] ks = {10};
    float k1 = 1.2f, b = 0.75f;
    int passes = 3;
    double warmup = 2.0;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "-index": index = args[++i]; break;
        case "-analyzer": analyzerName = args[++i]; break;
        case "-queries": sets.add(args[++i].split("=", 2)); break;
        case "-k": {
          String[] parts = args[++i].split(",");
          ks = new int[parts.length];
          for (int j = 0; j < parts.length; j++) ks[j] = Integer.parseInt(parts[j]);
          break;
        }
        case "-k1": k1 = Float.parseFloat(args[++i]); break;
        case "-b": b = Float.parseFloat(args[++i]); break;
        case "-passes": passes = Integer.parseInt(args[++i]); break;
        case "-warmup": warmup = Double.parseDouble(args[++i]); break;
        case "-run": runPrefix = args[++i]; break;
        default: throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    if (index == null || analyzerName == null || sets.isEmpty()) {
      throw new IllegalArgumentException("search needs -index, -analyzer and -queries NAME=FILE");
    }
    Analyzer analyzer = analyzer(analyzerName);
    IndexSearcher.setMaxClauseCount(1 << 16); // lay questions have hundreds of distinct terms
    try (IndexReader reader = DirectoryReader.open(FSDirectory.open(Paths.get(index)))) {
      IndexSearcher searcher = new IndexSearcher(reader); // no executor: one thread
      searcher.setSimilarity(new BM25Similarity(k1, b));
      for (String[] set : sets) {
        List<String> ids = new ArrayList<>(), texts = new ArrayList<>();
        for (String line : Files.readAllLines(Paths.get(set[1]), StandardCharsets.UTF_8)) {
          if (line.isEmpty()) continue;
          String[] parts = line.split("\t", 2);
          ids.add(parts[0]);
          texts.add(parts.length > 1 ? parts[1] : "");
        }
        int n = texts.size();
        for (int k : ks) {
          int[][] hits = new int[n][];
          float[][] scores = new float[n][];
          List<Double> seconds = new ArrayList<>();
          double warmed = 0;
          for (int pass = 0; pass <= passes; pass++) { // pass 0: warm-up, untimed, repeated for -warmup s
            long t0 = System.nanoTime();
            for (int q = 0; q < n; q++) {
              TopDocs top = searcher.search(query(analyzer, texts.get(q)), k);
              int[] docs = new int[top.scoreDocs.length];
              float[] s = new float[docs.length];
              for (int j = 0; j < docs.length; j++) {
                docs[j] = top.scoreDocs[j].doc;
                s[j] = top.scoreDocs[j].score;
              }
              hits[q] = docs;
              scores[q] = s;
            }
            double secs = (System.nanoTime() - t0) / 1e9;
            if (pass > 0) {
              seconds.add(secs);
            } else if ((warmed += secs) < warmup) {
              pass--; // warm up again
            }
          }
          if (runPrefix != null) { // outside the timing: document numbers to ids
            StoredFields stored = reader.storedFields();
            Path out = Paths.get(runPrefix + "." + set[0] + ".k" + k + ".trec");
            try (BufferedWriter w = Files.newBufferedWriter(out, StandardCharsets.UTF_8)) {
              for (int q = 0; q < n; q++) {
                for (int j = 0; j < hits[q].length; j++) {
                  w.write(ids.get(q) + " Q0 " + stored.document(hits[q][j]).get(ID) + " " + (j + 1) + " "
                      + scores[q][j] + " lucene\n");
                }
              }
            }
          }
          StringBuilder list = new StringBuilder();
          for (double s : seconds) list.append(list.length() == 0 ? "" : ", ").append(String.format(Locale.ROOT, "%.4f", s));
          System.out.println(String.format(Locale.ROOT,
              "LUCENELOOP {\"command\": \"search\", \"queries\": %s, \"k\": %d, \"n\": %d, \"seconds\": [%s], "
                  + "\"docs\": %d, \"vm_hwm_kib\": %d}",
              quote(set[0]), k, n, list, reader.numDocs(), vmHwmKib()));
        }
      }
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length == 0) {
      throw new IllegalArgumentException("usage: LuceneLoop index <IndexCollection args> | search ...");
    }
    String[] rest = java.util.Arrays.copyOfRange(args, 1, args.length);
    if (args[0].equals("index")) {
      index(rest);
    } else if (args[0].equals("search")) {
      search(rest);
    } else {
      throw new IllegalArgumentException("unknown command " + args[0]);
    }
  }
}
